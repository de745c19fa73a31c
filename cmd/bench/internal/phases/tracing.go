package phases

import (
	"context"
	"fmt"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

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
func (b *Bench) tracing(ctx context.Context) error {
	sink, err := testbed.StartOTLPSink()
	if err != nil {
		return err
	}
	defer sink.Close()
	type side struct {
		events  int
		elapsed time.Duration
		lat     report.Latencies
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

	n, d := max(b.o.IngestN/2, 1), b.o.IngestDur/2
	for _, on := range rounds {
		var env []string
		if on {
			env = sink.TracingEnv()
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
		sink.Take()
		before := testbed.ReadCPU(ctx, db, s)
		r, err := b.publishLoad(ctx, c, ts, false, n, d, 0)
		if err != nil {
			done()
			return fmt.Errorf("ingest, %s: %w", name[on], err)
		}
		after := testbed.ReadCPU(ctx, db, s)
		_, err = checkStored(ctx, db, r.events, 1)
		done() // stops the server, which flushes its spans
		if err != nil {
			return err
		}
		spans, _, _ := sink.Take()
		sd := sides[on]
		sd.events += len(r.events)
		sd.elapsed += r.elapsed
		sd.lat = append(sd.lat, r.lat...)
		sd.errors += r.errors
		sd.spans += spans
		if before.OK && after.OK {
			sd.cpu += after.Server - before.Server
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

	drainN := max(b.o.DrainN/2, 1)
	var cpu [2]testbed.CPUUse
	b.lastDrainCPU = &cpu
	defer func() { b.lastDrainCPU = nil }()
	for _, on := range rounds {
		v := drainVariants[0] // a: one endpoint, instant receiver
		if on {
			v.env, v.traceparent = sink.TracingEnv(), benchTraceparent
		}
		sink.Take()
		rate, _, err := b.drainOnce(ctx, "tracing", v, drainN, 1)
		if err != nil {
			return fmt.Errorf("drain, %s: %w", name[on], err)
		}
		spans, _, _ := sink.Take() // drainOnce stopped its server: the spans are flushed
		sd := sides[on]
		sd.delivered += drainN
		sd.drainTime += time.Duration(float64(drainN) / rate * float64(time.Second))
		sd.spans += spans
		if s, _, _, ok := cpu[0].PerDelivery(cpu[1], drainN); ok {
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
		note := fmt.Sprintf("%d publishers, %d B payloads, fan-out 1, 2 rounds", b.o.Publishers, b.o.Payload)
		b.res.Add("tracing", "ingest, "+name[on], rate[on], "events/s", note)
		b.res.Add("tracing", "ingest, "+name[on]+" p50", sd.lat.Millis(50), "ms", "")
		b.res.Add("tracing", "ingest, "+name[on]+" p99", sd.lat.Millis(99), "ms", "")
		if sd.errors > 0 {
			b.res.Add("tracing", "ingest, "+name[on]+" errors", float64(sd.errors), "errors", "")
		}
		if sd.cpu > 0 {
			evCPU[on] = sd.cpu * 1e6 / float64(sd.events)
			b.res.Add("tracing", "ingest, "+name[on]+", server CPU per event", evCPU[on], "µs", "")
		}
		b.res.Add("tracing", "drain a, "+name[on], drainRate[on], "deliveries/s", fmt.Sprintf("1 endpoint, instant receiver, 2 × %d deliveries", drainN))
		if sd.drainCPU > 0 {
			delCPU[on] = sd.drainCPU / float64(sd.delivered)
			b.res.Add("tracing", "drain a, "+name[on]+", server CPU per delivery", delCPU[on], "µs", "")
		}
		b.res.Add("tracing", "spans exported, "+name[on], float64(sd.spans), "spans", "")
		fmt.Printf("tracing %s: ingest %.0f events/s (p50 %.1f ms, p99 %.1f ms, %.0f µs server CPU/event); drain %.0f deliveries/s (%.0f µs server CPU/delivery)\n",
			name[on], rate[on], sd.lat.Millis(50), sd.lat.Millis(99), evCPU[on], drainRate[on], delCPU[on])
	}
	ratio := func(what string, on, off float64) {
		if off > 0 && on > 0 {
			b.res.Add("tracing", what+": on / off", on/off, "×", "")
			fmt.Printf("tracing: %s on / off %.3f×\n", what, on/off)
		}
	}
	ratio("ingest rate", rate[true], rate[false])
	ratio("ingest p99", sides[true].lat.Millis(99), sides[false].lat.Millis(99))
	ratio("ingest server CPU per event", evCPU[true], evCPU[false])
	ratio("drain rate", drainRate[true], drainRate[false])
	ratio("drain server CPU per delivery", delCPU[true], delCPU[false])
	return nil
}
