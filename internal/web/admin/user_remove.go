package admin

import (
	"net/http"

	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/web/core"
)

// RemoveUser deletes one of the tenant's users; their next request finds no user and signs them out.
func (h *Handler) RemoveUser(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	id, err := pathUser(r)
	if err == nil {
		err = h.Tenants.RemoveUser(r.Context(), t.ID, id)
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("dashboard user removed from the dashboard", "tenant_id", t.ID, "user_id", id, "by", core.Caller(r).ID)
	h.SetFlash(r, "success", "User removed: they are signed out at their next request.")
	http.Redirect(w, r, tenantHref(t)+"/users", http.StatusSeeOther)
}
