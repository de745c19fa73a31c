package admin

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/web/core"
)

// RevokeToken revokes one of a tenant's API tokens at once (its next API request is refused) and returns
// to the tenant's page. A token of another tenant, unknown or already revoked, is the 404 page.
func (h *Handler) RevokeToken(w http.ResponseWriter, r *http.Request) {
	tenantID, err := core.PathID(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	tokenID, err := uuid.Parse(r.PathValue("token"))
	if err != nil {
		h.NotFound(w, r)
		return
	}
	if err := h.Tenants.RevokeToken(r.Context(), tenantID, tokenID); err != nil {
		h.Fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("API token revoked from the dashboard", "tenant_id", tenantID, "token_id", tokenID,
		"by", core.Caller(r).ID)
	h.SetFlash(r, "success", "Token revoked: requests with it are refused from now on.")
	http.Redirect(w, r, "/admin/tenants/"+tenantID.String(), http.StatusSeeOther)
}
