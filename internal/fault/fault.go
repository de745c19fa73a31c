// Package fault carries errors meant for the caller: each has one of the contract's error codes and a
// message safe to show. Domain packages return them; the API and the dashboard render them. Any other
// error is internal and is logged, not shown.
package fault

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Code is one of the contract's error codes.
type Code string

// The contract's error codes (docs/contract.md, JSON API; api/openapi.yaml).
const (
	Unauthenticated Code = "UNAUTHENTICATED"
	Forbidden       Code = "FORBIDDEN"
	NotFound        Code = "NOT_FOUND"
	InvalidRequest  Code = "INVALID_REQUEST"
	InvalidState    Code = "INVALID_STATE"
	MaxRetries      Code = "MAX_RETRIES_EXCEEDED"
	PayloadTooLarge Code = "PAYLOAD_TOO_LARGE"
	RateLimited     Code = "RATE_LIMITED"
	Internal        Code = "INTERNAL"
)

// Status is the HTTP status of a code.
func (c Code) Status() int {
	switch c {
	case Unauthenticated:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	case NotFound:
		return http.StatusNotFound
	case InvalidRequest:
		return http.StatusBadRequest
	case InvalidState, MaxRetries:
		return http.StatusConflict
	case PayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case RateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// Error is an error with a code and a message for the caller.
type Error struct {
	Code    Code
	Message string
	// RetryAfter is set with RateLimited.
	RetryAfter time.Duration
	// Details say where a request went wrong when there is more than one place to say (a payload that
	// does not satisfy its event type's schema); the API renders them as "details".
	Details []Detail
}

// Detail is one problem of a request: where (a JSON pointer into what was sent) and what.
type Detail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is an INVALID_REQUEST error.
func Invalid(format string, args ...any) *Error { return New(InvalidRequest, format, args...) }

// Missing is a NOT_FOUND error for one kind of object.
func Missing(what string) *Error { return New(NotFound, "%s not found", what) }

// Limited is a RATE_LIMITED error with the time to wait.
func Limited(after time.Duration, format string, args ...any) *Error {
	e := New(RateLimited, format, args...)
	e.RetryAfter = after
	return e
}

// As returns the *Error inside err, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Is reports whether err carries the code.
func Is(err error, code Code) bool {
	e := As(err)
	return e != nil && e.Code == code
}
