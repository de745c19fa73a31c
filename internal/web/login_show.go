package web

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/web/templates"
)

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, err := uuid.Parse(h.Sessions.GetString(r.Context(), keyUserID)); err == nil || h.Sessions.GetString(r.Context(), keyPortalID) != "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	l := h.Layout(r, "Sign in")
	notice := l.Flash
	l.Flash = nil
	h.Render(w, r, http.StatusOK, templates.Login(templates.LoginPage{
		Layout: l, Notice: notice, Next: safeNext(r.URL.Query().Get("next")),
	}))
}
