package admin

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/web/templates"
)

// usersForm is what a refused users-page form brings back: the add form's email and errors, or one
// user's new-password error.
type usersForm struct {
	email, emailError, passwordError string
	user                             uuid.UUID
	userPasswordError                string
}

// TenantUsers lists a tenant's dashboard users.
func (h *Handler) TenantUsers(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	h.renderUsers(w, r, t, http.StatusOK, usersForm{})
}

func (h *Handler) renderUsers(w http.ResponseWriter, r *http.Request, t tenants.Tenant, status int, f usersForm) {
	users, err := h.Tenants.ListUsers(r.Context(), t.ID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	base := tenantHref(t) + "/users"
	p := templates.TenantUsersPage{
		Layout:     h.adminLayout(r, templates.NavOverview, "Users of "+t.Name, h.tenantCrumb(t), templates.Crumb{Label: "Users"}),
		TenantName: t.Name, TenantHref: tenantHref(t), AddAction: base,
		Email: f.email, EmailError: f.emailError, PasswordError: f.passwordError,
		MinPasswordLength: tenants.MinPasswordLength,
	}
	for _, u := range users {
		line := templates.UserLine{
			ID: u.ID.String(), Email: u.Email, Created: h.TimeView(u.CreatedAt),
			PasswordAction: base + "/" + u.ID.String() + "/password", RemoveAction: base + "/" + u.ID.String() + "/remove",
		}
		if u.ID == f.user {
			line.PasswordError = f.userPasswordError
		}
		p.Users = append(p.Users, line)
	}
	h.Render(w, r, status, templates.TenantUsers(p))
}
