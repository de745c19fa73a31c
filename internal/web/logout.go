package web

import (
	"net/http"
)

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if pid := h.Sessions.GetString(r.Context(), keyPortalID); pid != "" {
		h.portalLogout(w, r, pid)
		return
	}
	if err := h.Sessions.Destroy(r.Context()); err != nil {
		h.Fail(w, r, err)
		return
	}
	h.SetFlash(r, "info", "You are signed out.") // in a new, empty session
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
