package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

const traceAdminToken = "server-test-admin-token-for-tracing"

// The trace context a publisher sends (W3C example values).
const (
	callerTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID      = "00f067aa0ba902b7"
	callerTraceparent = "00-" + callerTraceID + "-" + callerSpanID + "-01"
)

// traceEnv is a running server, a tenant and a receiver that records what it was sent.
type traceEnv struct {
	t      *testing.T
	srv    *server.Server
	base   string
	tenant string

	mu       sync.Mutex
	received []http.Header
	// answer says what the receiver answers on a path.
	answer func(path string, n int) int
}

func newTraceEnv(t *testing.T, opts server.Options) *traceEnv {
	t.Helper()
	url := dbURL
	if opts.TracerProvider != nil {
		// The spans are recorded by this server's provider: on a database of its own, no other test's
		// worker or replay runner takes its deliveries or chunks (and their spans).
		url = ownDatabase(t)
	}
	cfg := servertest.Config(t, url)
	cfg.AdminToken = traceAdminToken
	e := &traceEnv{t: t}
	e.srv, e.base = servertest.StartWithBackground(t, cfg, nil, opts)
	e.tenant = e.call("POST", "/api/v1/tenants", map[string]any{"name": "tracing " + uuid.NewString()}, nil, 201)["id"].(string)
	return e
}

// receiver serves the subscriptions' endpoints: POST /<name>, answered by answer.
func (e *traceEnv) receiver() string {
	counts := map[string]int{}
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.received = append(e.received, r.Header.Clone())
		counts[r.URL.Path]++
		n := counts[r.URL.Path]
		e.mu.Unlock()
		w.WriteHeader(e.answer(r.URL.Path, n))
	}))
	e.t.Cleanup(rs.Close)
	return rs.URL
}

func (e *traceEnv) call(method, path string, body any, hdr http.Header, want int) map[string]any {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+traceAdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		e.t.Fatalf("%s %s: want %d, got %d %s", method, path, want, res.StatusCode, b)
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// waitState polls a delivery until it is in state.
func (e *traceEnv) waitState(id, state string) {
	e.t.Helper()
	var d map[string]any
	eventually(e.t, 20*time.Second, func() string { return fmt.Sprintf("delivery %s: still %v, want %s", id, d["state"], state) }, func() bool {
		d = e.call("GET", "/api/v1/tenants/"+e.tenant+"/deliveries/"+id, nil, nil, 200)
		return d["state"] == state
	})
}

func withTraceparent() http.Header {
	return http.Header{"Traceparent": {callerTraceparent}}
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func wantAttr(t *testing.T, s sdktrace.ReadOnlySpan, key string, want any) {
	t.Helper()
	v, ok := attr(s, key)
	if !ok {
		t.Errorf("span %q lacks %s", s.Name(), key)
		return
	}
	if got := v.AsInterface(); got != want {
		t.Errorf("span %q: %s = %v (%T), want %v (%T)", s.Name(), key, got, got, want, want)
	}
}

// spansNamed returns the ended spans called name, waiting a little for them: spans end in the server's own
// goroutines (the replay runner's next chunk, say), which the test does not wait on.
func spansNamed(t *testing.T, rec *tracetest.SpanRecorder, name string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	eventually(t, 5*time.Second, func() string { return fmt.Sprintf("%d spans %q, want %d", len(out), name, n) }, func() bool {
		out = out[:0]
		for _, s := range rec.Ended() {
			if s.Name() == name {
				out = append(out, s)
			}
		}
		return len(out) >= n
	})
	if len(out) != n {
		t.Fatalf("%d spans %q, want %d", len(out), name, n)
	}
	return out
}

func recordingProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// A publish sent with a traceparent: the request's span is its child, the publish span the request's,
// and every attempt of the event's deliveries is the publish span's child, in the same trace, with its
// subscription, delivery, attempt number, status and outcome. Receivers get no trace header.
func TestTracingPublishAndAttemptsShareTheTrace(t *testing.T) {
	t.Parallel()
	tp, rec := recordingProvider(t)
	e := newTraceEnv(t, server.Options{TracerProvider: tp})
	e.answer = func(path string, n int) int {
		if path == "/gone-wrong" {
			return http.StatusBadRequest // permanent: failed at once
		}
		return http.StatusOK
	}
	url := e.receiver()
	okSub := e.call("POST", "/api/v1/tenants/"+e.tenant+"/subscriptions", map[string]any{"url": url + "/ok"}, nil, 201)["id"].(string)
	badSub := e.call("POST", "/api/v1/tenants/"+e.tenant+"/subscriptions", map[string]any{"url": url + "/gone-wrong"}, nil, 201)["id"].(string)

	pub := e.call("POST", "/api/v1/tenants/"+e.tenant+"/events", map[string]any{"event_type": "order.paid", "payload": map[string]any{"n": 1}},
		withTraceparent(), 202)
	deliveries := pub["deliveries"].([]any)
	if len(deliveries) != 2 {
		t.Fatalf("publish made %d deliveries, want 2", len(deliveries))
	}
	states := map[string]string{okSub: "delivered", badSub: "failed"}
	bySub := map[string]string{}
	for _, d := range deliveries {
		d := d.(map[string]any)
		bySub[d["subscription_id"].(string)] = d["id"].(string)
		e.waitState(d["id"].(string), states[d["subscription_id"].(string)])
	}

	// The request's span: named after its route, the caller's span its parent.
	var request sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "POST /api/v1/tenants/{tenantID}/events" {
			request = s
		}
	}
	if request == nil {
		t.Fatal("no span POST /api/v1/tenants/{tenantID}/events")
	}
	if got := request.Parent(); got.TraceID().String() != callerTraceID || got.SpanID().String() != callerSpanID || !got.IsRemote() {
		t.Errorf("request span's parent is %v, want the caller's %s", got, callerTraceparent)
	}
	if request.SpanKind() != trace.SpanKindServer {
		t.Errorf("request span kind %v", request.SpanKind())
	}
	wantAttr(t, request, "http.route", "/api/v1/tenants/{tenantID}/events")
	wantAttr(t, request, "http.response.status_code", int64(202))

	publish := spansNamed(t, rec, "publish", 1)[0]
	if publish.Parent().SpanID() != request.SpanContext().SpanID() || publish.SpanContext().TraceID().String() != callerTraceID {
		t.Errorf("publish span's parent %v, want the request's span %v", publish.Parent(), request.SpanContext())
	}
	wantAttr(t, publish, "hookline.tenant_id", e.tenant)
	wantAttr(t, publish, "hookline.event_type", "order.paid")
	wantAttr(t, publish, "hookline.deliveries", int64(2))
	wantAttr(t, publish, "hookline.event_id", pub["id"])

	checkAttemptSpans(t, spansNamed(t, rec, "delivery.attempt", 2), publish, pub["id"], bySub, okSub, badSub)

	e.checkNoTraceHeaders(2)
}

// checkAttemptSpans checks the attempts' spans: the publish span's children, in its trace, each with its
// subscription, delivery, attempt number, status and outcome.
func checkAttemptSpans(t *testing.T, attempts []sdktrace.ReadOnlySpan, publish sdktrace.ReadOnlySpan, eventID any, bySub map[string]string, okSub, badSub string) {
	t.Helper()
	for _, a := range attempts {
		if a.SpanContext().TraceID().String() != callerTraceID {
			t.Errorf("attempt span in trace %s, want the publish's %s", a.SpanContext().TraceID(), callerTraceID)
		}
		if a.Parent().SpanID() != publish.SpanContext().SpanID() {
			t.Errorf("attempt span's parent %s, want the publish span %s", a.Parent().SpanID(), publish.SpanContext().SpanID())
		}
		sub, _ := attr(a, "hookline.subscription_id")
		wantAttr(t, a, "hookline.delivery_id", bySub[sub.AsString()])
		wantAttr(t, a, "hookline.attempt", int64(1))
		wantAttr(t, a, "hookline.event_id", eventID)
		if _, ok := attr(a, "hookline.duration_ms"); !ok {
			t.Errorf("attempt span lacks its duration")
		}
		switch sub.AsString() {
		case okSub:
			wantAttr(t, a, "http.response.status_code", int64(200))
			wantAttr(t, a, "hookline.outcome", "delivered")
			if a.Status().Code == codes.Error {
				t.Errorf("delivered attempt's span is an error: %v", a.Status())
			}
		case badSub:
			wantAttr(t, a, "http.response.status_code", int64(400))
			wantAttr(t, a, "hookline.outcome", "failed")
			if a.Status().Code != codes.Error {
				t.Errorf("failed attempt's span status %v, want an error", a.Status())
			}
		default:
			t.Errorf("attempt span of subscription %q", sub.AsString())
		}
	}
}

// checkNoTraceHeaders checks that the receiver got n webhooks, none carrying the platform's trace context.
func (e *traceEnv) checkNoTraceHeaders(n int) {
	t := e.t
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.received) != n {
		t.Fatalf("receiver got %d requests, want %d", len(e.received), n)
	}
	for _, h := range e.received {
		for _, name := range []string{"Traceparent", "Tracestate", "Baggage"} {
			if v := h.Get(name); v != "" {
				t.Errorf("the webhook carried %s: %q", name, v)
			}
		}
	}
}

// A recover (and a bulk replay, which runs the same way) continues the trace of the request that started
// it: replay.start under the request, each chunk under that (in whichever process runs it), and the
// replayed delivery's next attempt under the chunk that queued it. A manual retry's attempt is traced
// under the retry's request.
func TestTracingRecoverAndRetry(t *testing.T) {
	t.Parallel()
	tp, rec := recordingProvider(t)
	e := newTraceEnv(t, server.Options{TracerProvider: tp})
	e.answer = func(path string, n int) int {
		if n == 1 {
			return http.StatusBadRequest
		}
		return http.StatusOK
	}
	url := e.receiver()
	sub := e.call("POST", "/api/v1/tenants/"+e.tenant+"/subscriptions", map[string]any{"url": url + "/r"}, nil, 201)["id"].(string)
	pub := e.call("POST", "/api/v1/tenants/"+e.tenant+"/events", map[string]any{"event_type": "order.paid", "payload": map[string]any{}}, nil, 202)
	id := pub["deliveries"].([]any)[0].(map[string]any)["id"].(string)
	e.waitState(id, "failed")

	const recoverTrace = "0af7651916cd43dd8448eb211c80319c"
	e.call("POST", "/api/v1/tenants/"+e.tenant+"/subscriptions/"+sub+"/recover",
		map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)},
		http.Header{"Traceparent": {"00-" + recoverTrace + "-b7ad6b7169203331-01"}}, 201)
	e.waitState(id, "delivered")

	start := spansNamed(t, rec, "replay.start", 1)[0]
	if start.SpanContext().TraceID().String() != recoverTrace {
		t.Errorf("replay.start in trace %s, want the recover request's %s", start.SpanContext().TraceID(), recoverTrace)
	}
	wantAttr(t, start, "hookline.replay.kind", "recover")
	wantAttr(t, start, "hookline.replay.matched", int64(1))
	var moved sdktrace.ReadOnlySpan
	for _, c := range spansNamed(t, rec, "replay.chunk", 2) { // one moves the row, the next finds none left
		if c.Parent().SpanID() != start.SpanContext().SpanID() || c.SpanContext().TraceID().String() != recoverTrace {
			t.Errorf("replay.chunk's parent %v, want replay.start %v", c.Parent(), start.SpanContext())
		}
		if v, _ := attr(c, "hookline.replay.moved"); v.AsInt64() == 1 {
			moved = c
		}
	}
	if moved == nil {
		t.Fatal("no replay.chunk moved the dead delivery")
	}
	var second sdktrace.ReadOnlySpan
	for _, a := range spansNamed(t, rec, "delivery.attempt", 2) {
		if v, _ := attr(a, "hookline.attempt"); v.AsInt64() == 2 {
			second = a
		}
	}
	if second == nil {
		t.Fatal("no span of the replayed attempt")
	}
	if second.Parent().SpanID() != moved.SpanContext().SpanID() || second.SpanContext().TraceID().String() != recoverTrace {
		t.Errorf("replayed attempt's parent %v, want the chunk that moved it %v", second.Parent(), moved.SpanContext())
	}
	wantAttr(t, second, "hookline.outcome", "delivered")

	// A manual retry of the delivered delivery: its next attempt follows the retry's request.
	const retryTrace = "11111111111111111111111111111111"
	e.call("POST", "/api/v1/tenants/"+e.tenant+"/deliveries/"+id+"/retry", nil,
		http.Header{"Traceparent": {"00-" + retryTrace + "-2222222222222222-01"}}, 202)
	var third sdktrace.ReadOnlySpan
	eventually(t, 20*time.Second, func() string { return "no span of the retried attempt" }, func() bool {
		for _, a := range rec.Ended() {
			if v, _ := attr(a, "hookline.attempt"); a.Name() == "delivery.attempt" && v.AsInt64() == 3 {
				third = a
			}
		}
		return third != nil
	})
	if third.SpanContext().TraceID().String() != retryTrace {
		t.Errorf("retried attempt in trace %s, want the retry request's %s", third.SpanContext().TraceID(), retryTrace)
	}
}

// Request spans are named after the route, never the path: ids stay out, and a portal link's token (a
// credential until used) appears in no span name or attribute. The dashboard's requests are traced too;
// probes and scrapes are not.
func TestTracingRequestSpansNameRoutesNotPaths(t *testing.T) {
	t.Parallel()
	tp, rec := recordingProvider(t)
	e := newTraceEnv(t, server.Options{TracerProvider: tp})
	token := strings.Repeat("Z", 43)
	res, err := http.Get(e.base + "/portal/" + token)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res, err = http.Get(e.base + "/login"); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	e.call("GET", "/api/v1/tenants/"+e.tenant, nil, nil, 200)
	for _, probe := range []string{"/healthz", "/readyz", "/metrics"} {
		if res, err = http.Get(e.base + probe); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}

	names := map[string]bool{}
	for _, s := range rec.Ended() {
		names[s.Name()] = true
		for _, kv := range s.Attributes() {
			if v := kv.Value.Emit(); strings.Contains(v, token) || strings.Contains(v, e.tenant) {
				t.Errorf("span %q: %s = %q carries the path", s.Name(), kv.Key, v)
			}
		}
		if strings.Contains(s.Name(), token) || strings.Contains(s.Name(), e.tenant) {
			t.Errorf("span named after the path: %q", s.Name())
		}
	}
	for _, want := range []string{"GET /portal/{token}", "GET /login", "GET /api/v1/tenants/{tenantID}"} {
		if !names[want] {
			t.Errorf("no span %q among %v", want, names)
		}
	}
	for _, probe := range []string{"GET /healthz", "GET /readyz", "GET /metrics"} {
		if names[probe] {
			t.Errorf("a span of the probe %q", probe)
		}
	}
}

// With no OTEL_* variable set, tracing is off: no exporter, no provider, nothing stored with deliveries,
// and the process's global provider is left alone.
func TestTracingOffByDefault(t *testing.T) {
	for _, name := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(name, "")
	}
	e := newTraceEnv(t, server.Options{})
	if server.TracingOf(e.srv).On() || server.TracingOf(e.srv).Tracer() != nil {
		t.Fatal("tracing is on with no OTEL_* variable set")
	}
	if _, span := otel.Tracer("x").Start(context.Background(), "x"); span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("the global tracer provider records spans")
	}
	e.answer = func(string, int) int { return http.StatusOK }
	url := e.receiver()
	e.call("POST", "/api/v1/tenants/"+e.tenant+"/subscriptions", map[string]any{"url": url + "/off"}, nil, 201)
	pub := e.call("POST", "/api/v1/tenants/"+e.tenant+"/events", map[string]any{"event_type": "order.paid", "payload": map[string]any{}},
		withTraceparent(), 202)
	id := pub["deliveries"].([]any)[0].(map[string]any)["id"].(string)
	e.waitState(id, "delivered")
	d, err := db.New(e.srv.Pool).GetDelivery(context.Background(), db.GetDeliveryParams{ID: uuid.MustParse(id), TenantID: uuid.MustParse(e.tenant)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Traceparent != nil {
		t.Errorf("a trace context was stored with tracing off: %q", *d.Traceparent)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if h := e.received[0].Get("Traceparent"); h != "" {
		t.Errorf("the webhook carried the publisher's traceparent: %q", h)
	}
}

// Which variables turn tracing on.
func TestTracingEnabledByTheStandardVariables(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "hookline"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
	} {
		if got := tracing.Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: enabled %v, want %v", c.env, got, c.want)
		}
	}
}

// otlpSink is an OTLP/HTTP receiver: it decodes what is posted to /v1/traces.
type otlpSink struct {
	mu       sync.Mutex
	requests []*collectortrace.ExportTraceServiceRequest
	bad      []string
}

func (k *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	b, _ := io.ReadAll(body)
	req := &collectortrace.ExportTraceServiceRequest{}
	err := proto.Unmarshal(b, req)
	k.mu.Lock()
	defer k.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		k.bad = append(k.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	k.requests = append(k.requests, req)
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// Configured only through the OTEL_* variables, the server exports its spans over OTLP/HTTP (protobuf):
// the publish and its attempt in the caller's trace, under the service name given, flushed by Stop.
func TestTracingExportsOverOTLPHTTP(t *testing.T) {
	sink := &otlpSink{}
	collector := httptest.NewServer(sink)
	defer collector.Close()
	exportThroughOTLP(t, collector.URL, "http/protobuf", func() []*collectortrace.ExportTraceServiceRequest {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if len(sink.bad) > 0 {
			t.Errorf("malformed exports: %v", sink.bad)
		}
		return sink.requests
	})
}

// grpcSink is an OTLP/gRPC collector's trace service.
type grpcSink struct {
	collectortrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	requests []*collectortrace.ExportTraceServiceRequest
}

func (g *grpcSink) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = append(g.requests, req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// The same over OTLP/gRPC, chosen by OTEL_EXPORTER_OTLP_PROTOCOL=grpc.
func TestTracingExportsOverOTLPGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sink := &grpcSink{}
	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, sink)
	go func() { _ = gs.Serve(ln) }()
	defer gs.Stop()
	exportThroughOTLP(t, "http://"+ln.Addr().String(), "grpc", func() []*collectortrace.ExportTraceServiceRequest {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return sink.requests
	})
}

// exportThroughOTLP starts a server configured only by OTEL_* variables to export to endpoint with
// protocol, publishes an event with the caller's traceparent, waits for its delivery, stops the server
// (which flushes) and checks what the collector received (exported returns it).
func exportThroughOTLP(t *testing.T, endpoint, protocol string, exported func() []*collectortrace.ExportTraceServiceRequest) {
	t.Helper()
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
	t.Setenv("OTEL_SERVICE_NAME", "hookline-otlp-test")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")

	e := newTraceEnv(t, server.Options{})
	if !server.TracingOf(e.srv).On() {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	e.answer = func(string, int) int { return http.StatusNoContent }
	url := e.receiver()
	e.call("POST", "/api/v1/tenants/"+e.tenant+"/subscriptions", map[string]any{"url": url + "/otlp"}, nil, 201)
	pub := e.call("POST", "/api/v1/tenants/"+e.tenant+"/events", map[string]any{"event_type": "order.paid", "payload": map[string]any{}},
		withTraceparent(), 202)
	id := pub["deliveries"].([]any)[0].(map[string]any)["id"].(string)
	e.waitState(id, "delivered")
	// The attempt's span ended before its result was recorded; Stop exports what is still buffered.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}

	found := map[string]bool{}
	for _, req := range exported() {
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if hex.EncodeToString(s.TraceId) != callerTraceID {
						continue
					}
					if service != "hookline-otlp-test" {
						t.Errorf("span %q exported under service.name %q", s.Name, service)
					}
					if ss.GetScope().GetName() != tracing.Scope {
						t.Errorf("span %q in scope %q", s.Name, ss.GetScope().GetName())
					}
					found[s.Name] = true
				}
			}
		}
	}
	for _, want := range []string{"POST /api/v1/tenants/{tenantID}/events", "publish", "delivery.attempt"} {
		if !found[want] {
			t.Errorf("span %q of the caller's trace was not exported; got %v", want, found)
		}
	}
}
