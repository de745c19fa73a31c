package phases

import (
	"context"
	"fmt"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// orderedKeys is the number of ordering keys of the ordered phase's backlog.
const orderedKeys = 1000

// ordered: the same backlog (DrainN deliveries to one endpoint, instant receiver) drained unordered and then
// ordered over 1,000 keys, twice each, alternating, as production runs: on one server process and one
// database, after a warm-up drain that is not counted, each round a new tenant's backlog on top of the
// history the earlier rounds left. The goal: ordered at least 0.7 × unordered, in the same run.
func (b *Bench) ordered(ctx context.Context) error {
	unordered := drainVariant{key: "a", name: "unordered: 1 endpoint, instant receiver", subs: 1}
	ordered := drainVariant{key: "o", name: fmt.Sprintf("ordered over %d keys: 1 endpoint, instant receiver", orderedKeys), subs: 1, keys: orderedKeys}
	db, err := b.o.Server.FreshDB(ctx, "ordered")
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := b.o.Server.Start(ctx, db.URL, b.drainEnv(unordered)...) // the same environment for both
	if err != nil {
		return err
	}
	defer s.Stop()
	servers := []*testbed.Server{s}
	if _, _, err := b.drainOn(ctx, "ordered", db, servers, ordered, b.o.DrainN/5, nil); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	rates := map[bool]float64{}
	const rounds = 4
	for round := range rounds {
		isOrdered := round%2 == 1
		v := unordered
		if isOrdered {
			v = ordered
		}
		rate, t, err := b.drainOn(ctx, "ordered", db, servers, v, b.o.DrainN, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		if t.Unique != t.Expected {
			return fmt.Errorf("%s: %s", v.name, t)
		}
		rates[isOrdered] += rate / (rounds / 2)
	}
	b.res.Add("ordered", "unordered drain, 1 endpoint", rates[false], "deliveries/s",
		fmt.Sprintf("%d deliveries, mean of two, one server after a warm-up, on the history of the rounds before", b.o.DrainN))
	b.res.Add("ordered", fmt.Sprintf("ordered drain, 1 endpoint, %d keys", orderedKeys), rates[true], "deliveries/s",
		"the same backlog, mean of two, alternating with the above on the same server")
	b.res.Add("ordered", report.RatioOrdered, rates[true]/rates[false], "×", "")
	return nil
}

// seedOrderedBacklog makes ts's one subscription ordered and seeds n pending deliveries to it spread over
// keys ordering keys in turn, as publishes with those keys would have placed them: each key's first
// delivery due now, the rest parked behind it in publish order, and each key's row naming its head.
func seedOrderedBacklog(ctx context.Context, c *testbed.Client, db *testbed.Database, ts *tenantSetup, n, size, keys int) error {
	if len(ts.subs) != 1 {
		return fmt.Errorf("an ordered backlog is seeded for one subscription, not %d", len(ts.subs))
	}
	if _, err := c.Call(ctx, "PATCH", "/tenants/"+ts.tenant+"/subscriptions/"+ts.subs[0], map[string]any{"ordered": true}, nil, nil); err != nil {
		return err
	}
	body := eventBody("bench.backlog", size)
	for done := 0; done < n; done += 10000 {
		k := min(10000, n-done)
		_, err := db.Pool.Exec(ctx, `
WITH ev AS (
    INSERT INTO events (id, tenant_id, event_type, body, request_hash, created_at)
    SELECT uuid_v7(), $1, 'bench.backlog', $2, '\x00', now() FROM generate_series(1, $3)
    RETURNING id, created_at
), numbered AS (
    SELECT id, created_at, $5::int + row_number() OVER (ORDER BY id) - 1 AS i FROM ev
)
INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at,
                                created_at, updated_at, ordering_key, ordering_seq)
SELECT uuid_v7(), $1, e.id, $4, 'bench.backlog',
       CASE WHEN e.i / $6 = 0 THEN e.created_at ELSE parked_until() END, e.created_at + interval '72 hours',
       e.created_at, e.created_at, 'key-' || (e.i % $6), e.i / $6 + 1
FROM numbered e`, ts.tenant, body, k, ts.subs[0], done, keys)
		if err != nil {
			return fmt.Errorf("seed ordered backlog: %w", err)
		}
	}
	_, err := db.Pool.Exec(ctx, `
INSERT INTO ordering_keys (subscription_id, ordering_key, tenant_id, published, head_id, head_seq, updated_at)
SELECT d.subscription_id, d.ordering_key, d.tenant_id, count(*), (array_agg(d.id ORDER BY d.ordering_seq))[1], 1, now()
FROM webhook_deliveries d WHERE d.subscription_id = $1 AND d.state = 'pending'
GROUP BY d.subscription_id, d.ordering_key, d.tenant_id`, ts.subs[0])
	if err != nil {
		return fmt.Errorf("seed ordering keys: %w", err)
	}
	_, err = db.Pool.Exec(ctx, "ANALYZE")
	return err
}
