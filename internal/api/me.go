package api

import (
	"net/http"
	"slices"

	"github.com/hookline/hookline/internal/principal"
)

// meAnswer is GET /me: who the bearer token is, so a client holding only a token finds its tenant.
type meAnswer struct {
	// TenantID is the token's tenant; null for an admin token, which reaches every tenant.
	TenantID *string `json:"tenant_id"`
	// Scopes are what the token may do: a tenant token's own; "admin" and every tenant scope for an admin
	// token, which holds them all.
	Scopes []string `json:"scopes"`
	// TokenID is the API token's id; null for HOOKLINE_ADMIN_TOKEN, which is configuration, not a stored token.
	TokenID *string `json:"token_id"`
}

func (a *API) me(w http.ResponseWriter, r *http.Request) {
	p := caller(r)
	var ans meAnswer
	if id, ok := p.Tenant(); ok {
		s := id.String()
		ans.TenantID = &s
	}
	if id, ok := p.Token(); ok {
		s := id.String()
		ans.TokenID = &s
	}
	if p.Admin {
		ans.Scopes = append([]string{"admin"}, principal.AllScopes...)
	} else {
		ans.Scopes = slices.Clone(p.Scopes)
		if ans.Scopes == nil {
			ans.Scopes = []string{}
		}
	}
	writeJSON(w, http.StatusOK, ans)
}
