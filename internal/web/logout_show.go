package web

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/web/templates"
)

func (h *Handler) logoutPage(w http.ResponseWriter, r *http.Request) {
	_, err := uuid.Parse(h.Sessions.GetString(r.Context(), keyUserID))
	if pid := h.Sessions.GetString(r.Context(), keyPortalID); pid != "" {
		ctx, handled := h.portalUser(w, r, pid)
		if !handled {
			r = r.WithContext(ctx)
			h.Render(w, r, http.StatusOK, templates.Logout(h.Layout(r, "Sign out")))
		}
		return
	}
	if err != nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	h.Render(w, r, http.StatusOK, templates.Logout(h.Layout(r, "Sign out")))
}
