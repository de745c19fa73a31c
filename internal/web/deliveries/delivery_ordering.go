package deliveries

import (
	"context"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// orderingOfDelivery fills what a delivery's page says of its ordering key. A delivery parked behind its
// key's head (ordered delivery) has no attempt time and nothing to retry by hand: the page says which
// delivery it waits for instead, and whether that one is dead and holds the key until it is resent or
// skipped (on_dead block). sub is its subscription (nil once deleted).
func (h *Handler) orderingOfDelivery(ctx context.Context, p *templates.DeliveryPage, tenantID uuid.UUID, d deliveries.Detail,
	sub *subscriptions.Subscription) error {
	if d.OrderingKey != nil {
		p.Ordering.Key = *d.OrderingKey
	}
	if sub != nil {
		p.Ordering.SubHref = "/subscriptions/" + sub.ID.String()
	}
	if !d.Endpoint.Deleted() {
		waiting, held, err := h.Dels.HeldKeyWaiting(ctx, tenantID, d.Delivery)
		if err != nil {
			return err
		}
		p.Ordering.Holds, p.Ordering.HoldsWaiting = held, waiting
	}
	if !d.Parked || d.Endpoint.Deleted() {
		return nil
	}
	o := &p.Ordering
	o.Parked = true
	if d.WaitingFor != nil {
		o.HeadHref, o.HeadShort = "/deliveries/"+d.WaitingFor.String(), core.ShortID(*d.WaitingFor)
		head, err := h.Dels.Get(ctx, tenantID, *d.WaitingFor)
		switch {
		case err == nil:
			o.HeadBlocks = head.State.Dead() && !head.Discarded && sub != nil && sub.OnDead == subscriptions.OnDeadBlock
		case fault.Is(err, fault.NotFound):
			// Gone meanwhile (retention): the key goes on without it.
		default:
			return err
		}
	}
	p.StateText = "pending: not tried yet. The deliveries of its ordering key are sent one at a time, in order."
	// Retry now and Resend have nothing to do: it is sent once the delivery before it is done.
	p.RetryNow, p.Resend = templates.Action{}, templates.Action{}
	p.CanResend, p.ResendNote = false, ""
	p.TimelineEnd, p.EndClass = "waits for the earlier delivery of its ordering key", "upcoming"
	if o.HeadBlocks {
		p.TimelineEnd = "waits until the dead delivery before it is resent or skipped"
	}
	if p.Summary.Class == "waiting" && sub != nil && sub.State != subscriptions.Paused {
		p.Summary.Headline = "Waiting for an earlier delivery of its key"
		if o.HeadBlocks {
			p.Summary.Headline = "Blocked: an earlier delivery of its key is dead"
		}
		p.Summary.AtLabel, p.Summary.At = "", templates.Time{}
	}
	// The parked note says what happens next; a note about the circuit or the first attempt does not apply.
	if sub == nil || sub.State != subscriptions.Paused {
		p.Summary.Note = ""
	}
	return nil
}
