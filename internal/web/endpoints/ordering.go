package endpoints

import (
	"net/http"

	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// orderingForm is the endpoint form's Ordering section as posted: whether events with the same ordering
// key are delivered one at a time in order, and what a dead one does to its key (subscriptions.OnDeadSkip
// or OnDeadBlock).
type orderingForm struct {
	// posted says the form had the section (its on_dead choice was posted, as a radio always is): a post
	// without it (a form from before the section) leaves ordering as it is.
	posted  bool
	ordered bool
	onDead  string
}

// readOrderingForm reads the Ordering section's fields.
func readOrderingForm(r *http.Request) orderingForm {
	return orderingForm{
		posted:  r.PostForm["on_dead"] != nil,
		ordered: r.PostFormValue("ordered") != "",
		onDead:  r.PostFormValue("on_dead"),
	}
}

// orderingOf is a stored subscription's ordering as the form shows it.
func orderingOf(s subscriptions.Subscription) orderingForm {
	return orderingForm{posted: true, ordered: s.Ordered, onDead: s.OnDead}
}

// apply puts the section into in: both fields are sent whole (the service changes only what differs, and
// its activity log records "ordered" and "on_dead" when they do). An unknown on_dead is the service's to
// refuse, beside the section.
func (f orderingForm) apply(in *subscriptions.Input) {
	if !f.posted {
		return
	}
	ordered, onDead := f.ordered, f.onDead
	in.Ordered, in.OnDead = &ordered, &onDead
}

// fields is the section as the form page shows it: a new form (nothing posted) starts unordered, skipping.
func (f orderingForm) fields() templates.OrderingFields {
	o := templates.OrderingFields{Ordered: f.ordered, OnDead: f.onDead}
	if o.OnDead != subscriptions.OnDeadBlock {
		o.OnDead = subscriptions.OnDeadSkip
	}
	return o
}
