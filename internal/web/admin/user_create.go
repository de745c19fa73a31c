package admin

import (
	"net/http"
	"strings"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/web/core"
)

// CreateUser adds a dashboard user to the tenant with the password the operator typed.
func (h *Handler) CreateUser(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	u, err := h.Tenants.CreateUser(r.Context(), t.ID, email, r.PostFormValue("password"))
	if fault.Is(err, fault.InvalidState) { // the one conflict: the email is taken
		err = fault.New(fault.InvalidState, "email is already a user's (of this or another tenant)")
	}
	if field, msg, ok := fieldOf(err, "email", "password"); ok {
		f := usersForm{email: email}
		if field == "password" {
			f.passwordError = msg
		} else {
			f.emailError = msg
		}
		h.renderUsers(w, r, t, fault.As(err).Code.Status(), f)
		return
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("dashboard user created from the dashboard", "tenant_id", t.ID, "user_id", u.ID, "by", core.Caller(r).ID)
	h.SetFlash(r, "success", "User "+u.Email+" added: they can sign in with the password you typed.")
	http.Redirect(w, r, tenantHref(t)+"/users", http.StatusSeeOther)
}
