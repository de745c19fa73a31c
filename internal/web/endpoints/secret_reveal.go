package endpoints

import (
	"net/http"
)

// RevealSecret is POST /subscriptions/{id}/secret: the signing secrets valid now, in this answer only
// (never a redirect, a flash or a log line).
func (h *Handler) RevealSecret(w http.ResponseWriter, r *http.Request) {
	h.showSecrets(w, r, false)
}
