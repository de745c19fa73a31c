package phases

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// catalogueSchema describes the harness's payloads (payload()) as a platform would: types, required
// fields, an id pattern, a currency enum, bounds. Publishing with it costs one parse of the payload into
// Go values and a walk of the schema per event.
const catalogueSchema = `{
  "type": "object",
  "required": ["order", "pad"],
  "properties": {
    "order": {
      "type": "object",
      "required": ["id", "total", "currency"],
      "properties": {
        "id": {"type": "string", "pattern": "^ord_[0-9]{8}$"},
        "total": {"type": "integer", "minimum": 0},
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]}
      },
      "additionalProperties": false
    },
    "pad": {"type": "string", "maxLength": 65536}
  }
}`

// catalogue: ingest with schema validation against without, in one run on one server: the same 1 KiB
// events to a type registered with catalogueSchema and to a type that is not in the catalogue (checked
// for nothing but well-formed JSON). Rounds alternate plain, validated, validated, plain, so a drift of
// the machine's load weighs on both sides; each round is half an ingest variant (-ingest-n, -ingest-time).
// Fan-out 1 to a paused subscription, as in ingest. The figures: events/s and p50/p99 of each side, the
// server's CPU per event of each, and the ratios validated / plain.
func (b *Bench) catalogue(ctx context.Context) error {
	db, s, c, done, err := b.serverPhase(ctx, "catalogue")
	if err != nil {
		return err
	}
	defer done()
	const validatedType = "bench.validated"
	if _, err := c.Call(ctx, "POST", "/event-types", map[string]any{"name": validatedType, "description": "The harness's order events.",
		"schema": json.RawMessage(catalogueSchema), "example": json.RawMessage(payload(200, 1))}, nil, nil); err != nil {
		return fmt.Errorf("register %s: %w", validatedType, err)
	}
	plain, err := b.setupTenant(ctx, c, 1, 0)
	if err != nil {
		return err
	}
	if err := plain.setState(ctx, c, "pause"); err != nil {
		return err
	}
	validated := *plain
	plain.eventType, validated.eventType = "bench.plain", validatedType
	// The schema is applied: a payload it refuses is refused (so the validated side cannot be vacuous).
	code, _ := c.Call(ctx, "POST", "/tenants/"+plain.tenant+"/events", map[string]any{"event_type": validatedType,
		"payload": map[string]any{"order": map[string]any{"id": "x"}, "pad": ""}}, nil, nil)
	if code != 400 {
		return fmt.Errorf("a payload the schema refuses got %d, not 400: the schema is not applied", code)
	}

	type side struct {
		name    string
		ts      *tenantSetup
		events  int
		elapsed time.Duration
		lat     report.Latencies
		cpu     float64 // server CPU seconds
		errors  int
	}
	sides := map[string]*side{"plain": {name: "without validation", ts: plain}, "validated": {name: "with a registered schema", ts: &validated}}
	n, d := max(b.o.IngestN/2, 1), b.o.IngestDur/2
	for _, which := range []string{"plain", "validated", "validated", "plain"} {
		sd := sides[which]
		before := testbed.ReadCPU(ctx, db, s)
		r, err := b.publishLoad(ctx, c, sd.ts, false, n, d, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", sd.name, err)
		}
		after := testbed.ReadCPU(ctx, db, s)
		sd.events += len(r.events)
		sd.elapsed += r.elapsed
		sd.lat = append(sd.lat, r.lat...)
		sd.errors += r.errors
		if before.OK && after.OK {
			sd.cpu += after.Server - before.Server
		}
		fmt.Printf("catalogue %s: %d events in %s: %.0f events/s\n", sd.name, len(r.events), r.elapsed.Round(time.Millisecond),
			float64(len(r.events))/r.elapsed.Seconds())
		if _, err := checkStored(ctx, db, r.events, 1); err != nil {
			return err
		}
	}
	rate := map[string]float64{}
	cpu := map[string]float64{}
	for _, which := range []string{"plain", "validated"} {
		sd := sides[which]
		rate[which] = float64(sd.events) / sd.elapsed.Seconds()
		note := fmt.Sprintf("%d publishers, %d B payloads, fan-out 1, 2 rounds", b.o.Publishers, b.o.Payload)
		b.res.Add("catalogue", "ingest "+sd.name, rate[which], "events/s", note)
		b.res.Add("catalogue", "ingest "+sd.name+" p50", sd.lat.Millis(50), "ms", "")
		b.res.Add("catalogue", "ingest "+sd.name+" p99", sd.lat.Millis(99), "ms", "")
		if sd.errors > 0 {
			b.res.Add("catalogue", "ingest "+sd.name+" errors", float64(sd.errors), "errors", "")
		}
		if sd.cpu > 0 {
			cpu[which] = sd.cpu * 1e6 / float64(sd.events)
			b.res.Add("catalogue", sd.name+" server CPU per event", cpu[which], "µs", "")
		}
		fmt.Printf("catalogue %s: %.0f events/s, p50 %.1f ms, p99 %.1f ms, server CPU %.0f µs/event\n", sd.name, rate[which],
			sd.lat.Millis(50), sd.lat.Millis(99), cpu[which])
	}
	if rate["plain"] > 0 {
		r := rate["validated"] / rate["plain"]
		b.res.Add("catalogue", "ingest rate: validated / plain", r, "×", "target ≥ 0.9 (within 10 %)")
		fmt.Printf("catalogue: validated / plain ingest rate %.3f×\n", r)
	}
	if cpu["plain"] > 0 && cpu["validated"] > 0 {
		b.res.Add("catalogue", "server CPU per event: validated / plain", cpu["validated"]/cpu["plain"], "×", "")
	}
	return nil
}
