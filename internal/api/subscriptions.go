package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
)

// subscriptionBody is a subscription create or PATCH body. rate_limit_per_second is kept raw so that an
// explicit null (remove the limit) differs from an absent field (leave it).
type subscriptionBody struct {
	URL                *string            `json:"url"`
	EventTypes         *[]string          `json:"event_types"`
	Description        *string            `json:"description"`
	Headers            *map[string]string `json:"headers"`
	RateLimitPerSecond json.RawMessage    `json:"rate_limit_per_second"`
	// The receiver's fields, raw too: null removes, absent leaves.
	Auth                 json.RawMessage `json:"auth"`
	TLSClientCertificate json.RawMessage `json:"tls_client_certificate"`
	Filter               json.RawMessage `json:"filter"`
	RetrySchedule        json.RawMessage `json:"retry_schedule"`
	// Type (webhook or polling) is read on create; a PATCH may only repeat it.
	Type *string `json:"type"`
}

// nullable decodes a field that may be absent (false, false), null (true, false) or a value (false, true).
func nullable(raw json.RawMessage, name string, v any) (clear, set bool, err error) {
	switch string(raw) {
	case "":
		return false, false, nil
	case "null":
		return true, false, nil
	}
	if err := decodeBytes(raw, v); err != nil {
		return false, false, fault.Invalid("%s: %s", name, fault.As(err).Message)
	}
	return false, true, nil
}

func (b subscriptionBody) input() (subscriptions.Input, error) {
	in := subscriptions.Input{URL: b.URL, EventTypes: b.EventTypes, Description: b.Description, Headers: b.Headers}
	in.Type = b.Type
	switch raw := string(b.RateLimitPerSecond); raw {
	case "":
	case "null":
		in.ClearRateLimit = true
	default:
		var n int
		if err := json.Unmarshal(b.RateLimitPerSecond, &n); err != nil {
			return in, fault.Invalid("rate_limit_per_second must be a whole number or null")
		}
		in.RateLimitPerSecond = &n
	}
	var (
		auth  subscriptions.AuthInput
		cert  subscriptions.CertificateInput
		sched []string
		set   bool
		err   error
	)
	if in.ClearAuth, set, err = nullable(b.Auth, "auth", &auth); err != nil {
		return in, err
	} else if set {
		in.Auth = &auth
	}
	if in.ClearClientCertificate, set, err = nullable(b.TLSClientCertificate, "tls_client_certificate", &cert); err != nil {
		return in, err
	} else if set {
		in.ClientCertificate = &cert
	}
	if in.ClearRetrySchedule, set, err = nullable(b.RetrySchedule, "retry_schedule", &sched); err != nil {
		return in, err
	} else if set {
		in.RetrySchedule = &sched
	}
	switch string(b.Filter) {
	case "":
	case "null":
		in.ClearFilter = true
	default:
		in.Filter = b.Filter
	}
	return in, nil
}

func (a *API) readSubscriptionBody(r *http.Request) (subscriptions.Input, error) {
	var b subscriptionBody
	if err := decode(r, &b); err != nil {
		return subscriptions.Input{}, err
	}
	return b.input()
}

// subscriptionWithSecret is the answer to create: the only time besides rotation the secret is shown.
type subscriptionWithSecret struct {
	subscriptions.Subscription
	Secret string `json:"secret"`
}

func (a *API) createSubscription(w http.ResponseWriter, r *http.Request) {
	in, err := a.readSubscriptionBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s, secret, err := a.Subscriptions.Create(r.Context(), tenantID(r), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, subscriptionWithSecret{s, secret})
}

func (a *API) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	subs, err := a.Subscriptions.List(r.Context(), tenantID(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": subs})
}

func (a *API) getSubscription(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	s, err := a.Subscriptions.Get(r.Context(), tenantID(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *API) updateSubscription(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	in, err := a.readSubscriptionBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s, err := a.Subscriptions.Update(r.Context(), tenantID(r), id, in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *API) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := a.Subscriptions.Delete(r.Context(), tenantID(r), id); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) pauseSubscription(w http.ResponseWriter, r *http.Request) {
	a.changeSubscription(w, r, a.Subscriptions.Pause)
}

func (a *API) resumeSubscription(w http.ResponseWriter, r *http.Request) {
	a.changeSubscription(w, r, a.Subscriptions.Resume)
}

func (a *API) changeSubscription(w http.ResponseWriter, r *http.Request,
	change func(ctx context.Context, tenant, id uuid.UUID) (subscriptions.Subscription, error)) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	s, err := change(r.Context(), tenantID(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *API) rotateSecret(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	secret, err := a.Subscriptions.RotateSecret(r.Context(), tenantID(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "secret": secret,
		"previous_secrets_expire_in_seconds": int(subscriptions.SecretOverlap.Seconds())})
}

// subscriptionSecrets answers the signing secrets valid now, newest first: {"secrets": [{"secret",
// "expires_at"}]}.
func (a *API) subscriptionSecrets(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	secrets, err := a.Subscriptions.Secrets(r.Context(), tenantID(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": secrets})
}

func (a *API) subscriptionHealth(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	h, err := a.Subscriptions.Health(r.Context(), tenantID(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// filterTestBody is POST /tenants/{t}/filter-test.
type filterTestBody struct {
	Filter    json.RawMessage `json:"filter"`
	EventType string          `json:"event_type"`
	Payload   json.RawMessage `json:"payload"`
}

// testFilter says whether an event would pass a filter, as a publish would decide, without storing anything.
func (a *API) testFilter(w http.ResponseWriter, r *http.Request) {
	var b filterTestBody
	if err := decode(r, &b); err != nil {
		writeError(w, r, err)
		return
	}
	if len(b.Filter) == 0 || string(b.Filter) == "null" {
		writeError(w, r, fault.Invalid("filter is required: the filter to test, a JSON object"))
		return
	}
	matches, err := subscriptions.TestFilter(b.Filter, b.EventType, b.Payload)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"matches": matches})
}
