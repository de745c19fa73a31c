package httpx

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCorrelationIDEchoedGeneratedAndLogged(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	var seen string
	h := Middleware(log, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = CorrelationID(r.Context())
			Logger(r.Context()).Info("inside")
		}))

	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set(CorrelationHeader, "abc-123")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Header().Get(CorrelationHeader); got != "abc-123" || seen != "abc-123" {
		t.Errorf("sent abc-123, echoed %q, handler saw %q", got, seen)
	}
	if n := strings.Count(logs.String(), `"correlation_id":"abc-123"`); n != 2 {
		t.Errorf("want the handler's line and the request line to carry the id, got %d lines:\n%s", n, logs.String())
	}

	for _, bad := range []string{"", "has spaces", strings.Repeat("x", 200), "new\nline"} {
		req := httptest.NewRequest("GET", "/x", nil)
		if bad != "" {
			req.Header[CorrelationHeader] = []string{bad}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get(CorrelationHeader)
		if got == "" || got == bad || !correlationRE.MatchString(got) {
			t.Errorf("for %q the response id is %q, want a fresh generated one", bad, got)
		}
	}
}

func TestPanicBecomesRenderedError(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	h := Middleware(log, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("rendered"))
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || rec.Body.String() != "rendered" {
		t.Errorf("got %d %q", rec.Code, rec.Body.String())
	}
}
