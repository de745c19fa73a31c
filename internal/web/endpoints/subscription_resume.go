package endpoints

import (
	"net/http"
)

func (h *Handler) Resume(w http.ResponseWriter, r *http.Request) {
	h.setSubscriptionState(w, r, false)
}
