package api

import (
	"encoding/json"
	"net/http"

	"github.com/hookline/hookline/internal/publish"
)

func (a *API) publish(w http.ResponseWriter, r *http.Request) {
	var in struct {
		EventType string          `json:"event_type"`
		Payload   json.RawMessage `json:"payload"`
	}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	out, err := a.Publisher.Publish(r.Context(), publish.PublishInput{
		TenantID: tenantID(r), EventType: in.EventType, Payload: in.Payload,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}
