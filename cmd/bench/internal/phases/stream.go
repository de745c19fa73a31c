package phases

import (
	"context"
	"fmt"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// latency: a steady stream at half the measured maximum (the lower of drain (a) and ingest fan-out 1,
// else -latency-rate) for -latency-time to one endpoint whose cap does not bind, instant receiver:
// p50/p99 of the receiver's first arrival − the publish's 202.
func (b *Bench) latency(ctx context.Context) error {
	rate := b.o.LatencyRate
	note := "-latency-rate (drain (a) and ingest not measured in this run)"
	if a, ok := b.res.Get("drain", "a: 1 endpoint, instant receiver"); ok {
		rate, note = a/2, "half drain (a)"
		if in, ok := b.res.Get("ingest", "fan-out 1"); ok && in < a {
			rate, note = in/2, "half ingest fan-out 1 (below drain (a))"
		}
	}
	_, s, c, done, err := b.serverPhase(ctx, "latency", fmt.Sprintf("HOOKLINE_ENDPOINT_CONCURRENCY=%d", b.o.DrainCap))
	if err != nil {
		return err
	}
	defer done()
	ts, err := b.setupTenant(ctx, c, 1, 0)
	if err != nil {
		return err
	}
	b.rc.Reset(0, true)
	_ = s.ResetPeak()
	n := int(rate * b.o.LatencyDur.Seconds())
	r, err := b.publishLoad(ctx, c, ts, false, n, b.o.LatencyDur+5*time.Second, rate)
	if err != nil {
		return err
	}
	behind, _, _ := b.rc.Counts()
	behind = len(r.events) - behind
	lat, missing := b.arrivals(ctx, r.events, ts.labels[0], 30*time.Second)
	var fromStart report.Latencies // every arrival is in by now (or missing)
	for id, sent := range r.sent {
		if at, ok := b.rc.Arrival(id + "/" + ts.labels[0]); ok {
			fromStart = append(fromStart, at.Sub(sent))
		}
	}
	b.recordPeak("latency", "", s)
	got := float64(len(r.events)) / r.elapsed.Seconds()
	fmt.Printf("latency: %d events at %.0f/s (asked %.0f/s, %s): 202 → receiver p50 %.1f ms, p99 %.1f ms; %d not yet delivered when the stream ended\n",
		len(r.events), got, rate, note, lat.Millis(50), lat.Millis(99), behind)
	b.res.Add("latency", "steady stream rate", got, "events/s", note)
	fmt.Printf("latency: publish → receiver p50 %.1f ms, p99 %.1f ms\n", fromStart.Millis(50), fromStart.Millis(99))
	b.res.Add("latency", "publish → receiver p50", fromStart.Millis(50), "ms", "from the start of the publish request")
	b.res.Add("latency", "publish → receiver p99", fromStart.Millis(99), "ms", "")
	b.res.Add("latency", "202 → receiver p50", lat.Millis(50), "ms", "")
	b.res.Add("latency", "202 → receiver p99", lat.Millis(99), "ms", "")
	b.res.Add("latency", "not yet delivered when the stream ended", float64(behind), "deliveries",
		"more than a second's worth at the stream's rate: the server fell behind")
	t := b.rc.Tally(len(r.events))
	if missing > 0 {
		fmt.Printf("latency: %d deliveries had not arrived 30 s after the stream\n", missing)
	}
	fmt.Printf("latency: %s\n", t)
	b.record("latency", "stream", t)
	return nil
}

// arrivals waits (up to wait) for every event's delivery to label and returns arrival − 202 of each.
func (b *Bench) arrivals(ctx context.Context, events map[string]time.Time, label string, wait time.Duration) (report.Latencies, int) {
	deadline := time.After(wait)
	var lat report.Latencies
	missing := 0
	for id, answered := range events {
		select {
		case at := <-b.rc.Await(id + "/" + label):
			lat = append(lat, at.Sub(answered))
		case <-deadline:
			missing++
		case <-ctx.Done():
			return lat, len(events)
		}
	}
	return lat, missing
}

// idle: with an idle server, -idle-n events one at a time, -idle-gap apart: receiver arrival − 202.
func (b *Bench) idle(ctx context.Context) error {
	_, _, c, done, err := b.serverPhase(ctx, "idle")
	if err != nil {
		return err
	}
	defer done()
	ts, err := b.setupTenant(ctx, c, 1, 0)
	if err != nil {
		return err
	}
	b.rc.Reset(0, true)
	time.Sleep(time.Second) // let the server settle into idle
	r, err := b.publishOneByOne(ctx, c, ts, b.o.IdleN, b.o.IdleGap)
	if err != nil {
		return err
	}
	fmt.Printf("idle pickup: %d events: publish → receiver p50 %.1f ms, p99 %.1f ms; 202 → receiver p50 %.1f ms, p99 %.1f ms\n",
		len(r.afterAccept), r.fromStart.Millis(50), r.fromStart.Millis(99), r.afterAccept.Millis(50), r.afterAccept.Millis(99))
	b.res.Add("idle", "publish → receiver p50", r.fromStart.Millis(50), "ms",
		fmt.Sprintf("%d events, %s apart; from the start of the publish request", b.o.IdleN, b.o.IdleGap))
	b.res.Add("idle", "publish → receiver p99", r.fromStart.Millis(99), "ms", "")
	b.res.Add("idle", "202 → receiver p50", r.afterAccept.Millis(50), "ms", "")
	b.res.Add("idle", "202 → receiver p99", r.afterAccept.Millis(99), "ms", "")
	time.Sleep(200 * time.Millisecond)
	t := b.rc.Tally(len(r.publish))
	fmt.Printf("idle pickup: %s\n", t)
	b.record("idle", "pickup", t)
	return nil
}

// oneByOne is what publishOneByOne measured, one entry per event.
type oneByOne struct {
	fromStart   report.Latencies // receiver arrival − the start of the publish request
	afterAccept report.Latencies // receiver arrival − the 202
	publish     report.Latencies // the 202 − the start of the publish request
}

// publishOneByOne publishes n events to ts's first subscription one at a time, with a tenant token, as a
// publisher in production (ingest's publishers do too), each waited for at the receiver (which must be
// tracking arrivals) before a pause of gap and the next.
func (b *Bench) publishOneByOne(ctx context.Context, c *testbed.Client, ts *tenantSetup, n int, gap time.Duration) (*oneByOne, error) {
	r := &oneByOne{}
	hdr := map[string]string{"Authorization": "Bearer " + ts.token}
	for i := range n {
		var p published
		body := map[string]any{"event_type": "bench.idle", "payload": rawJSON(payload(b.o.Payload, i))}
		sent := time.Now()
		if _, err := c.Call(ctx, "POST", "/tenants/"+ts.tenant+"/events", body, hdr, &p); err != nil {
			return nil, err
		}
		answered := time.Now()
		r.publish = append(r.publish, answered.Sub(sent))
		select {
		case at := <-b.rc.Await(p.ID + "/" + ts.labels[0]):
			r.afterAccept = append(r.afterAccept, at.Sub(answered))
			r.fromStart = append(r.fromStart, at.Sub(sent))
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("event %s not delivered within 10 s on an idle server", p.ID)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		time.Sleep(gap)
	}
	return r, nil
}
