package api

import (
	"encoding/json"
	"net/http"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/publish"
)

func (a *API) publish(w http.ResponseWriter, r *http.Request) {
	var in struct {
		EventType string          `json:"event_type"`
		Payload   json.RawMessage `json:"payload"`
		// OrderingKey is a pointer so that a key sent empty is refused rather than taken for none.
		OrderingKey *string `json:"ordering_key"`
	}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	var orderingKey string
	if in.OrderingKey != nil {
		if *in.OrderingKey == "" {
			writeError(w, r, fault.Invalid("ordering_key must be 1 to 128 printable characters"))
			return
		}
		orderingKey = *in.OrderingKey
	}
	out, err := a.Publisher.Publish(r.Context(), publish.PublishInput{
		TenantID: tenantID(r), EventType: in.EventType, Payload: in.Payload,
		IdempotencyKey: r.Header.Get("Idempotency-Key"), OrderingKey: orderingKey,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}
