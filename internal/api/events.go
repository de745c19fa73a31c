package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
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
	key := r.Header.Get("Idempotency-Key")
	if !validIdempotencyKey(key) {
		writeError(w, r, fault.Invalid("Idempotency-Key must be printable UTF-8 text without control characters"))
		return
	}
	out, err := a.Publisher.Publish(r.Context(), delivery.PublishInput{
		TenantID: tenantID(r), EventType: in.EventType, Payload: in.Payload,
		IdempotencyKey: key,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, out)
}

// validIdempotencyKey reports whether an Idempotency-Key can be stored as text: valid UTF-8 without control
// characters (its length is checked by the publisher). Empty means none.
func validIdempotencyKey(k string) bool {
	return utf8.ValidString(k) && !strings.ContainsFunc(k, unicode.IsControl)
}
