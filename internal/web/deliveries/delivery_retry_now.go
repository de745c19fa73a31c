package deliveries

import (
	"net/http"
)

// RetryNow sends a retrying delivery right away instead of at its next attempt, and says what happened.
func (h *Handler) RetryNow(w http.ResponseWriter, r *http.Request) {
	h.manualRetry(w, r, h.Dels.RetryNow, "Retrying now: the next attempt is made right away.",
		"Not retried", "too many retries by hand")
}
