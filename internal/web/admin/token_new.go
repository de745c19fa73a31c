package admin

import (
	"net/http"

	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/web/templates"
)

// NewTokenPage is the form creating an API token.
func (h *Handler) NewTokenPage(w http.ResponseWriter, r *http.Request) {
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
	h.Render(w, r, status, templates.NewToken(p))
}
