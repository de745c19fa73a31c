// Package api serves Hookline's JSON API (/api/v1). Handlers are thin: parse, authorize, call a domain
// service, render. Errors render in the contract's shape with its codes.
package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/pgfail"
)

// MaxBody is the largest request body accepted.
const MaxBody = 256 << 10

// writeJSON renders v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code          fault.Code `json:"code"`
	Message       string     `json:"message"`
	CorrelationID string     `json:"correlation_id"`
	Timestamp     string     `json:"timestamp"`
	// Details appear only on errors that have them (a payload failing its event type's schema).
	Details []fault.Detail `json:"details,omitempty"`
}

// writeError renders err in the contract's error shape. Errors that are not a *fault.Error are logged
// and shown as INTERNAL without detail.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	fe := fault.As(err)
	switch {
	case fe != nil:
	case pgfail.TimedOut(err):
		// A statement that ran out of time (a lock wait, a busy database, a statement_timeout): not known to
		// be an outage, so not called one. Still INTERNAL (500), the contract's code for the server's own
		// failures.
		httpx.Logger(r.Context()).Warn("request failed: the database did not answer in time", "err", err)
		fe = fault.New(fault.Internal, "the database did not answer in time: retry the request; a publish retried with the same Idempotency-Key is stored once")
	case pgfail.Unavailable(err):
		// A connection that broke or could not be made (a failover, a restart): the same request will work
		// once a primary answers again.
		httpx.Logger(r.Context()).Warn("request failed: the database is unavailable", "err", err)
		fe = fault.New(fault.Internal, "the database is unavailable for a moment (a restart or failover): retry the request; a publish retried with the same Idempotency-Key is stored once")
	}
	if fe == nil {
		httpx.Logger(r.Context()).Error("request failed", "err", err)
		fe = fault.New(fault.Internal, "internal error; quote the correlation id when reporting it")
	}
	if fe.Code == fault.RateLimited {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(fe.RetryAfter)))
	}
	if fe.Code == fault.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hookline"`)
	}
	writeJSON(w, fe.Code.Status(), errorBody{Error: errorDetail{
		Code: fe.Code, Message: fe.Message, CorrelationID: httpx.CorrelationID(r.Context()),
		Timestamp: time.Now().UTC().Format(time.RFC3339), Details: fe.Details,
	}})
}

// retryAfterSeconds is a wait as Retry-After says it: whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int { return int(math.Ceil(max(d.Seconds(), 1))) }

// decode reads a JSON body into v: one object, no unknown fields, at most MaxBody bytes.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fault.New(fault.PayloadTooLarge, "request body is larger than %d KiB", MaxBody>>10)
	}
	if err != nil {
		return fault.Invalid("could not read the request body")
	}
	return decodeBytes(body, v)
}

func decodeBytes(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return fault.Invalid("request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body)) // read in place: a publish's body is not copied again
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fault.Invalid("request body is not valid: %s", jsonProblem(err))
	}
	if dec.More() {
		return fault.Invalid("request body must hold one JSON object")
	}
	return nil
}

// jsonProblem says what is wrong with a body in words a client can act on.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("field %q must be %s", te.Field, jsonType(te.Type.Kind().String()))
		}
		return "it must be a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "malformed JSON: unexpected end"
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	return "malformed JSON"
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	case "bool":
		return "true or false"
	case "int", "int32", "int64", "float64":
		return "a number"
	}
	return "of another type"
}

// logger is a short hand for the request's logger.
func logger(r *http.Request) *slog.Logger { return httpx.Logger(r.Context()) }

// RenderPanic answers a request whose handler panicked with the contract's INTERNAL error.
func RenderPanic(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, fault.New(fault.Internal, "internal error; quote the correlation id when reporting it"))
}
