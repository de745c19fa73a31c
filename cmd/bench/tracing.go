package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSink is a loopback OTLP/HTTP collector for the tracing phase: it accepts POST /v1/traces, decodes
// the protobuf and counts the spans, so a run shows that tracing was really on and what it exported.
type otlpSink struct {
	srv  *http.Server
	base string

	mu      sync.Mutex
	spans   int
	exports int
	bytes   int64
}

func startOTLPSink() (*otlpSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &otlpSink{base: "http://" + l.Addr().String()}
	k.srv = &http.Server{Handler: k, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = k.srv.Serve(l) }()
	return k, nil
}

func (k *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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

func (k *otlpSink) take() (spans, exports int, bytes int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	spans, exports, bytes = k.spans, k.exports, k.bytes
	k.spans, k.exports, k.bytes = 0, 0, 0
	return
}

func (k *otlpSink) close() { _ = k.srv.Close() }

// tracingEnv is the server environment with tracing on: every span sampled and exported over OTLP/HTTP
// to the sink, configured only by the standard variables, as an operator would.
func (k *otlpSink) tracingEnv() []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + k.base,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=always_on",
		"OTEL_SERVICE_NAME=hookline-bench",
	}
}

// benchTraceparent is the trace context stored with the drain's seeded deliveries when tracing is on, as
// a traced publish leaves it: each attempt's span then continues a stored context, as in production.
const benchTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// tracing: what tracing on costs, in one run. Ingest (fan-out 1 to a paused subscription, as in ingest)
// and drain (variant a: one endpoint, instant receiver) each run with tracing off and on, in rounds off,
// on, on, off (a fresh server, and for the drain a fresh database and backlog, each round), so a drift of
// the machine's load weighs on both sides. With tracing on, every span is sampled (always_on) and
// exported over OTLP/HTTP to a loopback collector that decodes it, so the figures include the export. Each
// round is half an ingest variant (-ingest-n, -ingest-time) or half the drain's backlog (-drain-n). The
// figures: the rates, p50/p99 of publish, server CPU per event or delivery, and the ratios on / off.
func (b *bench) tracing(ctx context.Context) error {
	sink, err := startOTLPSink()
	if err != nil {
		return err
	}
	defer sink.close()
	type side struct {
		events  int
		elapsed time.Duration
		lat     latencies
		cpu     float64
		errors  int
		spans   int
		// drain
		delivered int
		drainTime time.Duration
		drainCPU  float64
	}
	sides := map[bool]*side{false: {}, true: {}}
	name := map[bool]string{false: "tracing off", true: "tracing on"}
	rounds := []bool{false, true, true, false}

	n, d := max(b.o.ingestN/2, 1), b.o.ingestDur/2
	for _, on := range rounds {
		var env []string
		if on {
			env = sink.tracingEnv()
		}
		db, s, c, done, err := b.serverPhase(ctx, "tracing", env...)
		if err != nil {
			return err
		}
		ts, err := b.setupTenant(ctx, c, 1, 0)
		if err == nil {
			err = ts.setState(ctx, c, "pause")
		}
		if err != nil {
			done()
			return err
		}
		sink.take()
		before := readCPU(ctx, db, s)
		r, err := b.publishLoad(ctx, c, ts, false, n, d, 0)
		if err != nil {
			done()
			return fmt.Errorf("ingest, %s: %w", name[on], err)
		}
		after := readCPU(ctx, db, s)
		_, err = checkStored(ctx, db, r.events, 1)
		done() // stops the server, which flushes its spans
		if err != nil {
			return err
		}
		spans, _, _ := sink.take()
		sd := sides[on]
		sd.events += len(r.events)
		sd.elapsed += r.elapsed
		sd.lat = append(sd.lat, r.lat...)
		sd.errors += r.errors
		sd.spans += spans
		if before.ok && after.ok {
			sd.cpu += after.server - before.server
		}
		fmt.Printf("tracing ingest, %s: %d events in %s: %.0f events/s, %d spans exported\n", name[on], len(r.events),
			r.elapsed.Round(time.Millisecond), float64(len(r.events))/r.elapsed.Seconds(), spans)
		if on && spans < len(r.events) {
			return fmt.Errorf("ingest with tracing on: %d spans exported for %d publishes", spans, len(r.events))
		}
		if !on && spans > 0 {
			return fmt.Errorf("ingest with tracing off: %d spans exported", spans)
		}
	}

	drainN := max(b.o.drainN/2, 1)
	var cpu [2]cpuUse
	b.lastDrainCPU = &cpu
	defer func() { b.lastDrainCPU = nil }()
	for _, on := range rounds {
		v := drainVariants[0] // a: one endpoint, instant receiver
		if on {
			v.env, v.traceparent = sink.tracingEnv(), benchTraceparent
		}
		sink.take()
		rate, _, err := b.drainOnce(ctx, "tracing", v, drainN, 1)
		if err != nil {
			return fmt.Errorf("drain, %s: %w", name[on], err)
		}
		spans, _, _ := sink.take() // drainOnce stopped its server: the spans are flushed
		sd := sides[on]
		sd.delivered += drainN
		sd.drainTime += time.Duration(float64(drainN) / rate * float64(time.Second))
		sd.spans += spans
		if s, _, _, ok := cpu[0].perDelivery(cpu[1], drainN); ok {
			sd.drainCPU += s * float64(drainN)
		}
		fmt.Printf("tracing drain, %s: %.0f deliveries/s, %d spans exported\n", name[on], rate, spans)
		if on && spans < drainN {
			return fmt.Errorf("drain with tracing on: %d spans exported for %d attempts", spans, drainN)
		}
	}

	rate := map[bool]float64{}
	evCPU := map[bool]float64{}
	drainRate := map[bool]float64{}
	delCPU := map[bool]float64{}
	for _, on := range []bool{false, true} {
		sd := sides[on]
		rate[on] = float64(sd.events) / sd.elapsed.Seconds()
		drainRate[on] = float64(sd.delivered) / sd.drainTime.Seconds()
		note := fmt.Sprintf("%d publishers, %d B payloads, fan-out 1, 2 rounds", b.o.publishers, b.o.payload)
		b.res.add("tracing", "ingest, "+name[on], rate[on], "events/s", note)
		b.res.add("tracing", "ingest, "+name[on]+" p50", sd.lat.ms(50), "ms", "")
		b.res.add("tracing", "ingest, "+name[on]+" p99", sd.lat.ms(99), "ms", "")
		if sd.errors > 0 {
			b.res.add("tracing", "ingest, "+name[on]+" errors", float64(sd.errors), "errors", "")
		}
		if sd.cpu > 0 {
			evCPU[on] = sd.cpu * 1e6 / float64(sd.events)
			b.res.add("tracing", "ingest, "+name[on]+", server CPU per event", evCPU[on], "µs", "")
		}
		b.res.add("tracing", "drain a, "+name[on], drainRate[on], "deliveries/s", fmt.Sprintf("1 endpoint, instant receiver, 2 × %d deliveries", drainN))
		if sd.drainCPU > 0 {
			delCPU[on] = sd.drainCPU / float64(sd.delivered)
			b.res.add("tracing", "drain a, "+name[on]+", server CPU per delivery", delCPU[on], "µs", "")
		}
		b.res.add("tracing", "spans exported, "+name[on], float64(sd.spans), "spans", "")
		fmt.Printf("tracing %s: ingest %.0f events/s (p50 %.1f ms, p99 %.1f ms, %.0f µs server CPU/event); drain %.0f deliveries/s (%.0f µs server CPU/delivery)\n",
			name[on], rate[on], sd.lat.ms(50), sd.lat.ms(99), evCPU[on], drainRate[on], delCPU[on])
	}
	ratio := func(what string, on, off float64) {
		if off > 0 && on > 0 {
			b.res.add("tracing", what+": on / off", on/off, "×", "")
			fmt.Printf("tracing: %s on / off %.3f×\n", what, on/off)
		}
	}
	ratio("ingest rate", rate[true], rate[false])
	ratio("ingest p99", sides[true].lat.ms(99), sides[false].lat.ms(99))
	ratio("ingest server CPU per event", evCPU[true], evCPU[false])
	ratio("drain rate", drainRate[true], drainRate[false])
	ratio("drain server CPU per delivery", delCPU[true], delCPU[false])
	return nil
}
