package testbed

import (
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLPSink is a loopback OTLP/HTTP collector for the tracing phase: it accepts POST /v1/traces, decodes
// the protobuf and counts the spans, so a run shows that tracing was really on and what it exported.
type OTLPSink struct {
	srv  *http.Server
	base string

	mu      sync.Mutex
	spans   int
	exports int
	bytes   int64
}

// StartOTLPSink starts the collector on a free loopback port; Close stops it.
func StartOTLPSink() (*OTLPSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &OTLPSink{base: "http://" + l.Addr().String()}
	k.srv = &http.Server{Handler: k, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = k.srv.Serve(l) }()
	return k, nil
}

// ServeHTTP takes one export.
func (k *OTLPSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	b, err := io.ReadAll(r.Body)
	req := &collectortrace.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(b, req)
	}
	if err != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	n := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	k.mu.Lock()
	k.spans += n
	k.exports++
	k.bytes += int64(len(b))
	k.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// Take returns the spans, exports and bytes received since the last Take.
func (k *OTLPSink) Take() (spans, exports int, bytes int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	spans, exports, bytes = k.spans, k.exports, k.bytes
	k.spans, k.exports, k.bytes = 0, 0, 0
	return
}

// Close stops the collector.
func (k *OTLPSink) Close() { _ = k.srv.Close() }

// tracingEnv is the server environment with tracing on: every span sampled and exported over OTLP/HTTP
// to the sink, configured only by the standard variables, as an operator would.
func (k *OTLPSink) TracingEnv() []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + k.base,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=always_on",
		"OTEL_SERVICE_NAME=hookline-bench",
	}
}
