package endpoints

import (
	"net/http"
)

// RotateSecret is POST /subscriptions/{id}/rotate-secret: a new secret, shown in this answer once; the
// old ones keep signing for subscriptions.SecretOverlap, and the page says until when.
func (h *Handler) RotateSecret(w http.ResponseWriter, r *http.Request) {
	h.showSecrets(w, r, true)
}
