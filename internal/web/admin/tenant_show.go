package admin

import (
	"net/http"
	"strings"

	"github.com/hookline/hookline/web/templates"
)

// AdminTenant is one tenant's subscriptions with their 24 h health, as its users see them on their home page.
func (h *Handler) AdminTenant(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	subs, err := h.endpoints.SubscriptionsWithHealth(ctx, t.ID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	tokens, err := h.Tenants.ListTokens(ctx, t.ID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	p := templates.AdminTenantPage{
		Layout: h.adminLayout(r, templates.NavOverview, t.Name, templates.Crumb{Label: t.Name}),
		ID:     t.ID.String(), Name: t.Name, Created: h.TimeView(t.CreatedAt), Subscriptions: subs,
		DeadHref: "/admin/dead?tenant=" + t.ID.String(), ReplaysHref: "/admin/replays?tenant=" + t.ID.String(),
	}
	// The tenant's own banner: what its customers see at the top of their pages.
	p.Incidents = h.IncidentBanners(r, t.ID)
	if p.Activity, err = h.activityLog.Recent(r, t.ID); err != nil {
		h.Fail(w, r, err)
		return
	}
	for _, tk := range tokens {
		line := templates.TokenLine{
			ID: tk.ID.String(), Name: tk.Name, Scopes: strings.Join(tk.Scopes, ", "), Created: h.TimeView(tk.CreatedAt),
			RevokeAction: "/admin/tenants/" + t.ID.String() + "/tokens/" + tk.ID.String() + "/revoke",
		}
		if tk.LastUsedAt != nil {
			line.LastUsed = h.TimeView(*tk.LastUsedAt)
		}
		p.Tokens = append(p.Tokens, line)
	}
	h.Render(w, r, http.StatusOK, templates.AdminTenant(p))
}
