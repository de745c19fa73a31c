package deliveries

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/web/core"
)

// Resend puts a delivery back in the queue and says what happened: queued, rate-limited or not allowed.
func (h *Handler) Resend(w http.ResponseWriter, r *http.Request) {
	h.manualRetry(w, r, h.Dels.Retry, "Queued: the delivery is back in the queue and will be sent again shortly.",
		"Not resent", "too many resends")
}

// manualRetry runs Resend or Retry now (do) on the {id} delivery and says what happened in a flash: done,
// rate-limited ("<notDone>: <limited> for this subscription right now") or not allowed, with the reason.
func (h *Handler) manualRetry(w http.ResponseWriter, r *http.Request,
	do func(ctx context.Context, tenantID, id uuid.UUID, actor deliveries.Actor) (deliveries.Delivery, error),
	done, notDone, limited string) {
	u := core.Caller(r)
	tenantID, id, err := h.deliveryTenant(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	_, err = do(r.Context(), tenantID, id, deliveries.Actor{Admin: u.Admin})
	fe := fault.As(err)
	switch {
	case err == nil:
		h.SetFlash(r, "success", done)
	case fe != nil && fe.Code == fault.RateLimited:
		h.SetFlash(r, "warning", fmt.Sprintf("%s: %s for this subscription right now. Try again in %d s.",
			notDone, limited, max(core.SecondsUp(fe.RetryAfter), 1)))
	case fe != nil && (fe.Code == fault.InvalidState || fe.Code == fault.MaxRetries):
		h.SetFlash(r, "error", notDone+": "+fe.Message+".")
	default:
		h.Fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/deliveries/"+id.String(), http.StatusSeeOther)
}
