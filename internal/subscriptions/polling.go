package subscriptions

import (
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
)

// Types of a subscription.
const (
	// Webhook subscriptions are sent to: Hookline POSTs each delivery to their URL.
	Webhook = "webhook"
	// Polling subscriptions have no URL: their consumers pull deliveries and commit them (internal/polling).
	Polling = "polling"
)

// PollingName is what pages call a polling subscription without a description: it has no URL.
const PollingName = "Polling subscription"

// pushOnly names the fields that only mean something when Hookline sends the request: a polling
// subscription refuses them rather than keeping settings that would silently do nothing.
func pushOnly(in Input) string {
	switch {
	case in.URL != nil:
		return "url"
	case in.Auth != nil:
		return "auth"
	case in.ClientCertificate != nil:
		return "tls_client_certificate"
	case in.Headers != nil && len(*in.Headers) > 0:
		return "headers"
	case in.RateLimitPerSecond != nil:
		return "rate_limit_per_second"
	case in.RetrySchedule != nil:
		return "retry_schedule"
	case in.Ordered != nil && *in.Ordered:
		// a consumer pulls in position order already; keys held one at a time mean a sender
		return "ordered"
	case in.OnDead != nil:
		return "on_dead"
	}
	return ""
}

// checkCreateType reads a create's type (webhook when absent) and, for a polling subscription, refuses
// the push-only fields; polling says which it is.
func checkCreateType(in Input) (polling bool, err error) {
	if in.Type == nil || *in.Type == Webhook {
		return false, nil
	}
	if *in.Type != Polling {
		return false, fieldError("type", "Choose webhook or polling.", fault.Invalid("type must be webhook or polling"))
	}
	if f := pushOnly(in); f != "" {
		return true, refusedForPolling(f)
	}
	return true, nil
}

// checkUpdateType refuses a change of type (a subscription keeps the type it was made with: its
// deliveries' positions and consumers belong to it) and, on a polling subscription, the push-only fields.
func checkUpdateType(in Input, old db.Subscription) error {
	if in.Type != nil && *in.Type != old.Type {
		return fieldError("type", "A subscription's type cannot be changed: create another one.",
			fault.Invalid("type cannot be changed (this subscription is %s); create another subscription", old.Type))
	}
	if old.Type == Polling {
		if f := pushOnly(in); f != "" {
			return refusedForPolling(f)
		}
	}
	return nil
}

func refusedForPolling(field string) *FieldError {
	return fieldError(field, "A polling subscription has no endpoint: its deliveries are pulled, never sent, so this setting does not apply.",
		fault.Invalid("%s is not allowed on a polling subscription: its deliveries are pulled by consumers, not sent", field))
}

func valueOr[T any](p *T, or T) T {
	if p == nil {
		return or
	}
	return *p
}
