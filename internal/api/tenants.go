package api

import (
	"net/http"
)

func (a *API) createTenant(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	t, err := a.Tenants.CreateTenant(r.Context(), in.Name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

func (a *API) listTenants(w http.ResponseWriter, r *http.Request) {
	ts, err := a.Tenants.ListTenants(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": ts})
}

func (a *API) getTenant(w http.ResponseWriter, r *http.Request) {
	t, err := a.Tenants.GetTenant(r.Context(), tenantID(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (a *API) createToken(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	t, err := a.Tenants.CreateToken(r.Context(), tenantID(r), in.Name, in.Scopes)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

func (a *API) listTokens(w http.ResponseWriter, r *http.Request) {
	ts, err := a.Tenants.ListTokens(r.Context(), tenantID(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": ts})
}

func (a *API) revokeToken(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "tokenID", "token")
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := a.Tenants.RevokeToken(r.Context(), tenantID(r), id); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) createUser(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	u, err := a.Tenants.CreateUser(r.Context(), tenantID(r), in.Email, in.Password)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, u)
}
