package admin

import (
	"net/http"
	"slices"
	"strings"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// CreateToken issues a tenant token and shows it on this answer only: it is not stored, and the answer is
// not cached (Cache-Control: no-store on every page).
func (h *Handler) CreateToken(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	name, scopes := r.PostFormValue("name"), r.PostForm["scope"]
	tk, err := h.Tenants.CreateToken(r.Context(), t.ID, name, scopes)
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
		h.Fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("API token created from the dashboard", "tenant_id", t.ID, "token_id", tk.ID, "by", core.Caller(r).ID)
	h.renderToken(w, r, t, http.StatusCreated, templates.NewTokenPage{
		Created: &templates.CreatedToken{Name: tk.Name, Token: tk.Token, Scopes: strings.Join(tk.Scopes, ", ")},
	})
}
