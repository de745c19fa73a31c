package endpoints

import (
	"net/http"
)

func (h *Handler) Pause(w http.ResponseWriter, r *http.Request) {
	h.setSubscriptionState(w, r, true)
}
