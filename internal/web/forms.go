package web

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/web/templates"
)

// maxFormBody bounds every dashboard form but the endpoint form. The largest of them (bulk replay's
// criteria) is well under 1 KiB; without a bound Go reads 10 MB of a urlencoded body into memory per request.
const maxFormBody = 16 << 10

// maxEndpointFormBody bounds the endpoint form (and its Test filter), which may carry a client
// certificate chain of up to 16 KiB of PEM with its key, a 4 KiB filter and a payload to test it on, all
// URL-encoded (a third larger, and more for JSON's quotes and braces).
const maxEndpointFormBody = 96 << 10

// endpointFormRoutes are the routes that take the endpoint form.
var endpointFormRoutes = map[string]bool{
	"/subscriptions": true, "/subscriptions/{id}": true,
	"/subscriptions/filter-test": true, "/subscriptions/{id}/filter-test": true,
}

// formBound is the largest form body a route takes.
func formBound(r *http.Request) int64 {
	if rc := chi.RouteContext(r.Context()); rc != nil && endpointFormRoutes[rc.RoutePattern()] {
		return maxEndpointFormBody
	}
	return maxFormBody
}

// Messages of refused forms.
const (
	msgFormTooLarge = "This form is larger than %d KiB, so it was not read. Go back, shorten what you typed and send it again."
	msgFormBytes    = "The form's %s field holds a NUL byte or text that is not valid UTF-8, so it was not used. Type it again without the pasted control characters."
)

// forms reads the form of every state-changing request before its handler runs, once for all of them:
// a body over maxFormBody is a 413 (refused by its Content-Length before anything is read), and a value
// with a NUL byte or invalid UTF-8 (which PostgreSQL refuses, and no browser types) is a 400 naming the
// field. Handlers then read r.PostForm / r.Form, already parsed and safe to store.
func (h *Handler) forms(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		bound := formBound(r)
		if r.ContentLength > bound {
			h.formTooLarge(w, r, bound)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, bound)
		var err error
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
			err = r.ParseMultipartForm(bound)
		} else {
			err = r.ParseForm()
		}
		if err != nil {
			if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
				h.formTooLarge(w, r, bound)
				return
			}
			h.badForm(w, r, "The form could not be read.")
			return
		}
		if field, ok := badFormValue(r); ok {
			h.badForm(w, r, fmt.Sprintf(msgFormBytes, quoteField(field)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// badFormValue finds a field (name or value, query or body) that cannot be stored as text.
func badFormValue(r *http.Request) (string, bool) {
	keys := make([]string, 0, len(r.Form))
	for k := range r.Form {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same field named for the same form, whatever the map's order
	for _, k := range keys {
		if !storable(k) {
			return "", true
		}
		for _, v := range r.Form[k] {
			if !storable(v) {
				return k, true
			}
		}
	}
	return "", false
}

func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// quoteField names a field in a message; a field whose own name is unusable is "a".
func quoteField(field string) string {
	if field == "" {
		return "a"
	}
	return "“" + field + "”"
}

// formTooLarge answers 413. The sign-in form comes back empty with the message beside it; any other form
// is an error page (its page, rendered again, would need the values that were not read).
func (h *Handler) formTooLarge(w http.ResponseWriter, r *http.Request, bound int64) {
	msg := fmt.Sprintf(msgFormTooLarge, bound>>10)
	if r.URL.Path == "/login" {
		h.loginRefused(w, r, http.StatusRequestEntityTooLarge, msg)
		return
	}
	h.Fail(w, r, fault.New(fault.PayloadTooLarge, "%s", strings.TrimSuffix(msg, ".")))
}

// badForm answers 400 for a form that could not be used, the sign-in form again on /login.
func (h *Handler) badForm(w http.ResponseWriter, r *http.Request, msg string) {
	if r.URL.Path == "/login" {
		h.loginRefused(w, r, http.StatusBadRequest, msg)
		return
	}
	h.Fail(w, r, fault.Invalid("%s", strings.TrimSuffix(msg, ".")))
}

// loginRefused shows the sign-in form again, empty (nothing of a refused form is echoed), with msg.
func (h *Handler) loginRefused(w http.ResponseWriter, r *http.Request, status int, msg string) {
	page := templates.LoginPage{Layout: h.Layout(r, "Sign in"), Error: msg}
	h.Render(w, r, status, templates.Login(page))
}
