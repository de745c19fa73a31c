package admin

import (
	"net/http"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/web/core"
)

// ResetPassword sets one of the tenant's users' password to the one the operator typed.
func (h *Handler) ResetPassword(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	id, err := pathUser(r)
	if err == nil {
		err = h.Tenants.SetPassword(r.Context(), t.ID, id, r.PostFormValue("password"))
	}
	if _, msg, ok := fieldOf(err, "password"); ok {
		h.renderUsers(w, r, t, fault.As(err).Code.Status(), usersForm{user: id, userPasswordError: msg})
		return
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("dashboard user's password set from the dashboard", "tenant_id", t.ID, "user_id", id, "by", core.Caller(r).ID)
	h.SetFlash(r, "success", "Password set: the user signs in with the one you typed.")
	http.Redirect(w, r, tenantHref(t)+"/users", http.StatusSeeOther)
}
