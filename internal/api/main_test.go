package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
)

// dbURL is this package's fresh database, shared by every test server (each test works in its own tenants).
var dbURL string

func TestMain(m *testing.M) {
	testdb.Main(m, "api", func(u string) { dbURL = u })
}

const adminToken = "api-test-admin-token"

// env is one running Hookline server and a client for its JSON API.
type env struct {
	t      testing.TB
	srv    *server.Server
	base   string // http://127.0.0.1:port
	client *http.Client
}

// testConfig is the configuration of a test server: the test database, fast retries, private networks
// allowed (receivers are httptest servers on 127.0.0.1).
func testConfig(t testing.TB) config.Config {
	cfg := servertest.Config(t, dbURL)
	cfg.AdminToken = adminToken
	cfg.RetryBase = 20 * time.Millisecond
	cfg.RetryMaxDelay = 100 * time.Millisecond
	cfg.RetryMaxAttempts = 3
	cfg.AttemptTimeout = 3 * time.Second
	return cfg
}

// services says which of a process's services a test server runs.
type services int

const (
	// httpOnly is the API alone (servertest.Start): enough for a test that checks answers, or publishes
	// and reads deliveries without waiting for an attempt.
	httpOnly services = iota
	// withBackground adds the delivery worker, the maintenance leader, the replay runner and the
	// catalogue's poller (servertest.StartWithBackground), for a test that waits on one of them.
	withBackground
)

// start serves cfg with opts and the services asked for, and returns the env's client for it.
func start(t testing.TB, svc services, cfg config.Config, opts server.Options) *env {
	t.Helper()
	begin := servertest.Start
	if svc == withBackground {
		begin = servertest.StartWithBackground
	}
	srv, base := begin(t, cfg, nil, opts)
	return &env{t: t, srv: srv, base: base, client: &http.Client{Timeout: 20 * time.Second}}
}

// newEnv starts a server with svc for one test; mutate changes its configuration. It stops with the test.
func newEnv(t testing.TB, svc services, mutate ...func(*config.Config)) *env {
	t.Helper()
	cfg := testConfig(t)
	for _, f := range mutate {
		f(&cfg)
	}
	return start(t, svc, cfg, server.Options{})
}

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.status, truncate(string(r.body), 400)) }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// call sends method path (below /api/v1 unless it starts with "http" or "/api" or "/metrics"...) with
// token and body: nil for none, []byte or string sent as is, anything else as JSON. hdr are name, value pairs.
func (e *env) call(method, path, token string, body any, hdr ...string) reply {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatalf("marshal: %v", err)
		}
		rd = bytes.NewReader(j)
	}
	url := path
	if !strings.HasPrefix(path, "http") {
		url = e.base + "/api/v1" + path
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		e.t.Fatalf("new request %s %s: %v", method, path, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return reply{status: res.StatusCode, header: res.Header, body: b}
}

// must calls and requires status, decoding the answer into a value of type T.
func must[T any](e *env, status int, method, path, token string, body any, hdr ...string) T {
	e.t.Helper()
	r := e.call(method, path, token, body, hdr...)
	if r.status != status {
		e.t.Fatalf("%s %s: want %d, got %s", method, path, status, r)
	}
	var v T
	if len(r.body) > 0 {
		if err := json.Unmarshal(r.body, &v); err != nil {
			e.t.Fatalf("%s %s: decode %T: %v in %s", method, path, v, err, r)
		}
	}
	return v
}

// apiError is the contract's error body.
type apiError struct {
	Error struct {
		Code          string `json:"code"`
		Message       string `json:"message"`
		CorrelationID string `json:"correlation_id"`
		Timestamp     string `json:"timestamp"`
	} `json:"error"`
}

// checkErrorShape reports what is wrong with r as a contract error (nil when it is one): a JSON object
// with exactly "error", holding a non-empty code, message, correlation id (the one in X-Correlation-ID)
// and an RFC 3339 timestamp; Retry-After with RATE_LIMITED; the status matching the code.
func checkErrorShape(r reply) error {
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("content-type %q, want application/json", ct)
	}
	var raw map[string]map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		return fmt.Errorf("error body is not {\"error\": {...}}: %v", err)
	}
	if len(raw) != 1 || raw["error"] == nil {
		return fmt.Errorf("error body must hold only \"error\"")
	}
	var e apiError
	_ = json.Unmarshal(r.body, &e)
	d := e.Error
	if d.Code == "" || d.Message == "" || d.CorrelationID == "" || d.Timestamp == "" {
		return fmt.Errorf("error lacks code, message, correlation_id or timestamp")
	}
	// details come only with the problems of a payload against its event type's schema.
	if _, ok := raw["error"]["details"]; ok && (d.Code != "INVALID_REQUEST" || len(raw["error"]) != 5) {
		return fmt.Errorf("details on a %s error, or with other extra fields", d.Code)
	} else if !ok && len(raw["error"]) != 4 {
		return fmt.Errorf("error has %d fields, want exactly 4", len(raw["error"]))
	}
	if _, err := time.Parse(time.RFC3339, d.Timestamp); err != nil {
		return fmt.Errorf("timestamp %q is not RFC 3339", d.Timestamp)
	}
	if h := r.header.Get("X-Correlation-ID"); h != d.CorrelationID {
		return fmt.Errorf("correlation_id %q differs from X-Correlation-ID %q", d.CorrelationID, h)
	}
	want, ok := codeStatus[d.Code]
	if !ok {
		return fmt.Errorf("code %q is not one of the contract's", d.Code)
	}
	if want != r.status {
		return fmt.Errorf("code %s comes with %d, not %d", d.Code, want, r.status)
	}
	if d.Code == "RATE_LIMITED" && r.header.Get("Retry-After") == "" {
		return fmt.Errorf("RATE_LIMITED without Retry-After")
	}
	return nil
}

// codeStatus is the contract's error codes and their statuses.
var codeStatus = map[string]int{
	"UNAUTHENTICATED": 401, "FORBIDDEN": 403, "NOT_FOUND": 404, "INVALID_REQUEST": 400, "INVALID_STATE": 409,
	"MAX_RETRIES_EXCEEDED": 409, "PAYLOAD_TOO_LARGE": 413, "RATE_LIMITED": 429, "INTERNAL": 500,
}

// wantError requires r to be the contract error code (with its status).
func wantError(t testing.TB, what string, r reply, code string) apiError {
	t.Helper()
	var e apiError
	if err := checkErrorShape(r); err != nil {
		t.Errorf("%s: %v: %s", what, err, r)
		return e
	}
	_ = json.Unmarshal(r.body, &e)
	if e.Error.Code != code {
		t.Errorf("%s: want %s, got %s", what, code, r)
	}
	return e
}

// Objects as the API returns them (only what the tests read).
type tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

type subscription struct {
	ID                 string   `json:"id"`
	TenantID           string   `json:"tenant_id"`
	URL                string   `json:"url"`
	Description        string   `json:"description"`
	EventTypes         []string `json:"event_types"`
	State              string   `json:"state"`
	HeaderNames        []string `json:"header_names"`
	RateLimitPerSecond *int     `json:"rate_limit_per_second"`
	Secret             string   `json:"secret"`
}

type published struct {
	ID         string `json:"id"`
	EventType  string `json:"event_type"`
	Deliveries []struct {
		ID             string `json:"id"`
		SubscriptionID string `json:"subscription_id"`
		State          string `json:"state"`
	} `json:"deliveries"`
}

type deliveryDetail struct {
	ID             string     `json:"id"`
	EventID        string     `json:"event_id"`
	SubscriptionID string     `json:"subscription_id"`
	EventType      string     `json:"event_type"`
	State          string     `json:"state"`
	AttemptCount   int        `json:"attempt_count"`
	TotalAttempts  int        `json:"total_attempts"`
	ManualRetries  int        `json:"manual_retries"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	GiveUpAt       time.Time  `json:"give_up_at"`
	LastStatus     *int       `json:"last_status"`
	CreatedAt      time.Time  `json:"created_at"`
	Request        *struct {
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
	} `json:"request"`
	Attempts []struct {
		Attempt         int       `json:"attempt"`
		StartedAt       time.Time `json:"started_at"`
		DurationMs      *int      `json:"duration_ms"`
		Status          *int      `json:"status"`
		ResponseSnippet *string   `json:"response_snippet"`
		Error           *string   `json:"error"`
	} `json:"attempts"`
}

type page struct {
	Items        []deliveryDetail `json:"items"`
	NextCursor   string           `json:"next_cursor"`
	Total        *int             `json:"total"`
	TotalAtLeast *bool            `json:"total_at_least"`
}

// newTenant creates a tenant as admin.
func (e *env) newTenant(name string) string {
	e.t.Helper()
	return must[tenant](e, 201, "POST", "/tenants", adminToken, map[string]any{"name": name}).ID
}

// newToken issues a tenant token with scopes.
func (e *env) newToken(tenantID string, scopes ...string) string {
	e.t.Helper()
	v := must[struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}](e, 201, "POST", "/tenants/"+tenantID+"/tokens", adminToken, map[string]any{"name": "test", "scopes": scopes})
	if v.ID == "" || !strings.HasPrefix(v.Token, "hl_") {
		e.t.Fatalf("token answer lacks id or hl_ token: %+v", v)
	}
	return v.Token
}

// newSubscription creates a subscription (body as given; url required).
func (e *env) newSubscription(tenantID string, body map[string]any) subscription {
	e.t.Helper()
	return must[subscription](e, 201, "POST", "/tenants/"+tenantID+"/subscriptions", adminToken, body)
}

// publish publishes one event as admin.
func (e *env) publish(tenantID, eventType string, payload any, hdr ...string) published {
	e.t.Helper()
	return must[published](e, 202, "POST", "/tenants/"+tenantID+"/events", adminToken,
		map[string]any{"event_type": eventType, "payload": payload}, hdr...)
}

// delivery reads one delivery as admin.
func (e *env) delivery(tenantID, id string) deliveryDetail {
	e.t.Helper()
	return must[deliveryDetail](e, 200, "GET", "/tenants/"+tenantID+"/deliveries/"+id, adminToken, nil)
}

// waitState polls a delivery until it is in one of states.
func (e *env) waitState(tenantID, id string, states ...string) deliveryDetail {
	e.t.Helper()
	var d deliveryDetail
	if !eventually(20*time.Second, 20*time.Millisecond, func() bool {
		d = e.delivery(tenantID, id)
		return slices.Contains(states, d.State)
	}) {
		e.t.Fatalf("delivery %s is %s after 20 s, want one of %v: %+v", id, d.State, states, d)
	}
	return d
}

// eventually checks cond at once and then every interval until it holds (true) or within has passed
// (false): polling a real condition, where nothing signals the change (a row a worker updates).
func eventually(within, every time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
}

// ownDatabase gives a test's server a database of its own (a copy of the migrated template, dropped after
// the test). The package's tests share one database, and every test server's worker and replay runner
// work on all of its rows: a test whose server works differently (a clock of its own, another circuit
// breaker or retry policy), or that holds its replay runner, needs one where no other server works.
func ownDatabase(t testing.TB) func(*config.Config) {
	t.Helper()
	url, drop, err := testdb.Create(t.Context(), "api_own")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return func(c *config.Config) { c.DatabaseURL = url }
}

// receiver is an httptest endpoint recording what it gets and answering with status(path, n), n counting
// requests to that path from 1.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    map[string][]received
	status func(path string, n int) int
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t testing.TB, status func(path string, n int) int) *receiver {
	rc := &receiver{got: map[string][]received{}, status: status}
	if rc.status == nil {
		rc.status = func(string, int) int { return 200 }
	}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got[r.URL.Path] = append(rc.got[r.URL.Path], received{r.Header.Clone(), b})
		n := len(rc.got[r.URL.Path])
		rc.mu.Unlock()
		w.WriteHeader(rc.status(r.URL.Path, n))
		_, _ = w.Write([]byte("receiver says hi"))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests(path string) []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got[path]...)
}
