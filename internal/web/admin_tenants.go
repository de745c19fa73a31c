package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/web/templates"
)

// The operator's tenant administration: create a tenant; list, add, re-password and remove a tenant's
// dashboard users; create an API token (shown once). Each form calls the same tenants.Service function as
// the API, so the rules are one; a refusal is shown beside its field with the domain's own message.

// fieldOf tells which field a domain refusal is about: the domain's messages start with the field's name
// ("email is not a valid address", "password must be…"); anything else is about the first field.
func fieldOf(err error, fields ...string) (string, string, bool) {
	fe := fault.As(err)
	if fe == nil || (fe.Code != fault.InvalidRequest && fe.Code != fault.InvalidState) {
		return "", "", false
	}
	msg := strings.ToUpper(fe.Message[:1]) + fe.Message[1:] + "."
	for _, f := range fields {
		if strings.HasPrefix(fe.Message, f+" ") {
			return f, msg, true
		}
	}
	return fields[0], msg, true
}

// adminTenantPath is the {id} tenant, existing (the routes are an operator's: requireAdmin).
func (h *Handler) adminTenantPath(w http.ResponseWriter, r *http.Request) (tenants.Tenant, bool) {
	id, err := pathID(r)
	if err == nil {
		var t tenants.Tenant
		if t, err = h.tenants.GetTenant(r.Context(), id); err == nil {
			return t, true
		}
	}
	h.fail(w, r, err)
	return tenants.Tenant{}, false
}

func tenantHref(t tenants.Tenant) string { return "/admin/tenants/" + t.ID.String() }

func (h *Handler) tenantCrumb(t tenants.Tenant) templates.Crumb {
	return templates.Crumb{Label: t.Name, Href: tenantHref(t)}
}

// newTenant is the form creating a tenant.
func (h *Handler) newTenant(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, templates.NewTenant(templates.NewTenantPage{
		Layout: h.adminLayout(r, templates.NavOverview, "New tenant", templates.Crumb{Label: "New tenant"}),
	}))
}

// createTenant creates a tenant and leads to its page; a bad name comes back beside the field (400).
func (h *Handler) createTenant(w http.ResponseWriter, r *http.Request) {
	name := r.PostFormValue("name")
	t, err := h.tenants.CreateTenant(r.Context(), name)
	if _, msg, ok := fieldOf(err, "name"); ok {
		h.render(w, r, fault.As(err).Code.Status(), templates.NewTenant(templates.NewTenantPage{
			Layout: h.adminLayout(r, templates.NavOverview, "New tenant", templates.Crumb{Label: "New tenant"}),
			Name:   name, NameError: msg,
		}))
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("tenant created from the dashboard", "tenant_id", t.ID, "by", currentUser(r).ID)
	h.setFlash(r, "success", "Tenant created. Add its dashboard users and API tokens here.")
	http.Redirect(w, r, tenantHref(t), http.StatusSeeOther)
}

// usersForm is what a refused users-page form brings back: the add form's email and errors, or one
// user's new-password error.
type usersForm struct {
	email, emailError, passwordError string
	user                             uuid.UUID
	userPasswordError                string
}

// tenantUsers lists a tenant's dashboard users.
func (h *Handler) tenantUsers(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	h.renderUsers(w, r, t, http.StatusOK, usersForm{})
}

func (h *Handler) renderUsers(w http.ResponseWriter, r *http.Request, t tenants.Tenant, status int, f usersForm) {
	users, err := h.tenants.ListUsers(r.Context(), t.ID)
	if err != nil {
		h.fail(w, r, err)
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
			ID: u.ID.String(), Email: u.Email, Created: h.timeView(u.CreatedAt),
			PasswordAction: base + "/" + u.ID.String() + "/password", RemoveAction: base + "/" + u.ID.String() + "/remove",
		}
		if u.ID == f.user {
			line.PasswordError = f.userPasswordError
		}
		p.Users = append(p.Users, line)
	}
	h.render(w, r, status, templates.TenantUsers(p))
}

// createUser adds a dashboard user to the tenant with the password the operator typed.
func (h *Handler) createUser(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	u, err := h.tenants.CreateUser(r.Context(), t.ID, email, r.PostFormValue("password"))
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
		h.fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("dashboard user created from the dashboard", "tenant_id", t.ID, "user_id", u.ID, "by", currentUser(r).ID)
	h.setFlash(r, "success", "User "+u.Email+" added: they can sign in with the password you typed.")
	http.Redirect(w, r, tenantHref(t)+"/users", http.StatusSeeOther)
}

// pathUser reads the {user} path value; a malformed id is as missing as another tenant's user.
func pathUser(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue("user"))
	if err != nil {
		return uuid.Nil, fault.Missing("user")
	}
	return id, nil
}

// removeUser deletes one of the tenant's users; their next request finds no user and signs them out.
func (h *Handler) removeUser(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	id, err := pathUser(r)
	if err == nil {
		err = h.tenants.RemoveUser(r.Context(), t.ID, id)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("dashboard user removed from the dashboard", "tenant_id", t.ID, "user_id", id, "by", currentUser(r).ID)
	h.setFlash(r, "success", "User removed: they are signed out at their next request.")
	http.Redirect(w, r, tenantHref(t)+"/users", http.StatusSeeOther)
}

// resetPassword sets one of the tenant's users' password to the one the operator typed.
func (h *Handler) resetPassword(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	id, err := pathUser(r)
	if err == nil {
		err = h.tenants.SetPassword(r.Context(), t.ID, id, r.PostFormValue("password"))
	}
	if _, msg, ok := fieldOf(err, "password"); ok {
		h.renderUsers(w, r, t, fault.As(err).Code.Status(), usersForm{user: id, userPasswordError: msg})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("dashboard user's password set from the dashboard", "tenant_id", t.ID, "user_id", id, "by", currentUser(r).ID)
	h.setFlash(r, "success", "Password set: the user signs in with the one you typed.")
	http.Redirect(w, r, tenantHref(t)+"/users", http.StatusSeeOther)
}

// newTokenPage is the form creating an API token.
func (h *Handler) newTokenPage(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	h.renderToken(w, r, t, http.StatusOK, templates.NewTokenPage{})
}

func (h *Handler) renderToken(w http.ResponseWriter, r *http.Request, t tenants.Tenant, status int, p templates.NewTokenPage) {
	p.Layout = h.adminLayout(r, templates.NavOverview, "New API token", h.tenantCrumb(t), templates.Crumb{Label: "New API token"})
	p.TenantName, p.TenantHref, p.Action = t.Name, tenantHref(t), tenantHref(t)+"/tokens"
	if p.Scopes == nil {
		for _, s := range tenants.AllScopes {
			p.Scopes = append(p.Scopes, templates.ScopeChoice{Value: s})
		}
	}
	h.render(w, r, status, templates.NewToken(p))
}

// createToken issues a tenant token and shows it on this answer only: it is not stored, and the answer is
// not cached (Cache-Control: no-store on every page).
func (h *Handler) createToken(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	name, scopes := r.PostFormValue("name"), r.PostForm["scope"]
	tk, err := h.tenants.CreateToken(r.Context(), t.ID, name, scopes)
	if field, msg, ok := fieldOf(err, "name", "scopes", "unknown scope"); ok {
		p := templates.NewTokenPage{Name: name}
		for _, s := range tenants.AllScopes {
			p.Scopes = append(p.Scopes, templates.ScopeChoice{Value: s, Checked: slices.Contains(scopes, s)})
		}
		if field == "name" {
			p.NameError = msg
		} else {
			p.ScopesError = msg
		}
		h.renderToken(w, r, t, fault.As(err).Code.Status(), p)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("API token created from the dashboard", "tenant_id", t.ID, "token_id", tk.ID, "by", currentUser(r).ID)
	h.renderToken(w, r, t, http.StatusCreated, templates.NewTokenPage{
		Created: &templates.CreatedToken{Name: tk.Name, Token: tk.Token, Scopes: strings.Join(tk.Scopes, ", ")},
	})
}
