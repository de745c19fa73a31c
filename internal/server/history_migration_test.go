package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/migrate"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// previousRelease is the last migration of the release before the history was partitioned.
const previousRelease = 24

// TestMigratingAPopulatedDatabaseKeepsEveryRow makes a database of the previous release (its migrations,
// then rows as that release wrote them: events over ten days, some with an Idempotency-Key, deliveries in
// every state with their attempts), migrates it to the partitioned history and checks that every row of
// every history table is there, unchanged, and that the API reads and changes them: a delivery of each
// state found by id, an old Idempotency-Key still answered with its event, a dead delivery retried and
// delivered, a new event published and delivered.
func TestMigratingAPopulatedDatabaseKeepsEveryRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url, drop, err := testdb.CreateEmpty(ctx, "server_history_migrate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	if err := migrate.UpTo(ctx, url, previousRelease); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var received atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		io.Copy(io.Discard, r.Body) //nolint:errcheck // a test receiver
	}))
	defer rc.Close()
	old := populatePreviousRelease(t, pool, rc.URL, 3000)
	before := historyChecksums(t, pool, false)

	start := time.Now()
	if err := migrate.Up(ctx, url); err != nil {
		t.Fatal(err)
	}
	t.Logf("migrated %d deliveries, %d events, %d attempts in %s", before["deliveries"].rows, before["events"].rows,
		before["attempts"].rows, time.Since(start))
	after := historyChecksums(t, pool, true)
	for table, b := range before {
		if after[table] != b {
			t.Errorf("%s: before the migration %+v, after %+v", table, b, after[table])
		}
	}
	var partitioned int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid
		WHERE c.relname IN ('events', 'webhook_attempts', 'webhook_deliveries')`).Scan(&partitioned); err != nil || partitioned != 3 {
		t.Fatalf("%d of the history tables partitioned (%v), want 3", partitioned, err)
	}
	checkAPIAfterMigration(t, url, old, &received)
}

// previousReleaseRows names rows the previous release wrote, for the checks after the migration.
type previousReleaseRows struct {
	tenant     string
	byState    map[string]string // a delivery id of each state
	keyedEvent string            // an event published with Idempotency-Key "key-10"
}

// populatePreviousRelease writes n events over the last ten days, every tenth with an Idempotency-Key, each
// with a delivery to each of two subscriptions (to the receiver at url) in a state of its own and one
// attempt each, as the previous release's schema holds them.
func populatePreviousRelease(t *testing.T, pool *pgxpool.Pool, url string, n int) previousReleaseRows {
	t.Helper()
	ctx := t.Context()
	r := previousReleaseRows{byState: map[string]string{}}
	if err := pool.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('before partitioning') RETURNING id::text`).Scan(&r.tenant); err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO subscriptions (tenant_id, url) SELECT $1::uuid, $2 || '/' || g FROM generate_series(1, 2) g`, []any{r.tenant, url}},
		{`INSERT INTO subscription_secrets (subscription_id, secret)
		  SELECT id, 'whsec_' || encode(sha256(id::text::bytea), 'base64') FROM subscriptions WHERE tenant_id = $1::uuid`, []any{r.tenant}},
		// ids as uuid_v7() made them then: their time prefix is their creation time
		{`INSERT INTO events (id, tenant_id, event_type, body, idempotency_key, request_hash, created_at)
		 SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing
		            substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid,
		        $1::uuid, 'order.created', convert_to('{"n":' || g || '}', 'UTF8'),
		        CASE WHEN g % 10 = 0 THEN 'key-' || g END, CASE WHEN g % 10 = 0 THEN '\x00'::bytea END, at
		 FROM generate_series(1, $2::int) g, LATERAL (SELECT now() - make_interval(secs => g * 864000.0 / $2::int)) t(at)`, []any{r.tenant, n}},
		{`INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, state, give_up_at, created_at,
		                                 dead_at, lease_expires_at, lease_id, last_attempt_at, total_attempts, attempt_count, dead_reason)
		 SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing
		            substring(int8send(floor(extract(epoch FROM e.created_at) * 1000)::bigint + 1) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid,
		        e.tenant_id, e.id, s.id, e.event_type, x.st, e.created_at + interval '3 days', e.created_at,
		        CASE WHEN x.st IN ('failed', 'expired') THEN e.created_at + interval '1 hour' END,
		        CASE WHEN x.st = 'in_flight' THEN now() + interval '1 hour' END,
		        CASE WHEN x.st = 'in_flight' THEN gen_random_uuid() END,
		        CASE WHEN x.st <> 'pending' THEN e.created_at + interval '1 second' END, 1, 1,
		        CASE WHEN x.st = 'failed' THEN 'the endpoint answered 400' END
		 FROM events e CROSS JOIN subscriptions s
		 CROSS JOIN LATERAL (SELECT (ARRAY['delivered', 'delivered', 'failed', 'expired', 'pending', 'in_flight'])
		                            [1 + abs(hashtext(e.id::text || s.id::text)) % 6] AS st) x
		 WHERE e.tenant_id = $1::uuid`, []any{r.tenant}},
		{`INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, outcome,
		                               request_url, request_headers)
		 SELECT d.id, d.tenant_id, d.subscription_id, 1, d.created_at + interval '1 second', 12, 500,
		        CASE d.state WHEN 'delivered' THEN 'delivered' WHEN 'failed' THEN 'failed' ELSE 'retry' END, $2, '{}'
		 FROM webhook_deliveries d WHERE d.tenant_id = $1::uuid`, []any{r.tenant, url}},
	} {
		if _, err := pool.Exec(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("%v\n%s", err, st.sql)
		}
	}
	for _, state := range []string{"pending", "in_flight", "delivered", "failed", "expired"} {
		var id string
		if err := pool.QueryRow(ctx, `SELECT id::text FROM webhook_deliveries WHERE state = $1 AND created_at < now() - interval '2 days' LIMIT 1`,
			state).Scan(&id); err != nil {
			t.Fatalf("a %s delivery: %v", state, err)
		}
		r.byState[state] = id
	}
	if err := pool.QueryRow(ctx, `SELECT id::text FROM events WHERE idempotency_key = 'key-10'`).Scan(&r.keyedEvent); err != nil {
		t.Fatal(err)
	}
	return r
}

// tableSum is a history table's row count and a checksum of its rows in id order.
type tableSum struct {
	rows int64
	sum  string
}

// historyChecksums sums every row of the history tables, column by column as both schemas have them (the
// attempts' serial id, which the partitioned table no longer has, left out), and the Idempotency-Keys
// (on events before, in event_idempotency after).
func historyChecksums(t *testing.T, pool *pgxpool.Pool, partitioned bool) map[string]tableSum {
	t.Helper()
	keys := `SELECT count(*), coalesce(md5(string_agg(row(tenant_id, idempotency_key, id)::text, ',' ORDER BY id)), '')
	         FROM events WHERE idempotency_key IS NOT NULL`
	if partitioned {
		keys = `SELECT count(*), coalesce(md5(string_agg(row(tenant_id, idempotency_key, event_id)::text, ',' ORDER BY event_id)), '')
		        FROM event_idempotency`
	}
	sums := map[string]tableSum{}
	for table, query := range map[string]string{
		// The previous release's columns: later migrations add others, which its rows leave empty.
		"deliveries": `SELECT count(*), md5(string_agg(row(d.id, d.tenant_id, d.event_id, d.subscription_id, d.event_type, d.state,
		               d.attempt_count, d.total_attempts, d.manual_retries, d.next_attempt_at, d.give_up_at, d.lease_expires_at,
		               d.lease_id, d.last_attempt_at, d.last_status, d.last_response, d.last_error, d.dead_reason, d.discarded_at,
		               d.replay_id, d.created_at, d.updated_at, d.dead_at, d.traceparent)::text, ',' ORDER BY d.id)) FROM webhook_deliveries d`,
		"events": `SELECT count(*), md5(string_agg(row(e.*)::text, ',' ORDER BY e.id)) FROM events e`,
		"attempts": `SELECT count(*), md5(string_agg(row(delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms,
		             status, response_snippet, error, outcome, request_url, request_headers)::text, ',' ORDER BY delivery_id, attempt))
		             FROM webhook_attempts`,
		"idempotency keys": keys,
	} {
		var s tableSum
		if err := pool.QueryRow(t.Context(), query).Scan(&s.rows, &s.sum); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		sums[table] = s
	}
	return sums
}

// checkAPIAfterMigration serves the migrated database and uses the old rows through the API.
func checkAPIAfterMigration(t *testing.T, url string, old previousReleaseRows, received *atomic.Int64) {
	t.Helper()
	cfg := servertest.Config(t, url)
	cfg.AdminToken = "admin-token-for-the-migration-test"
	_, base := servertest.StartWithBackground(t, cfg, nil, server.Options{})
	api := func(method, path, body string, headers ...string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, base+"/api/v1/tenants/"+old.tenant+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+cfg.AdminToken)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out) //nolint:errcheck // checked by the callers' fields
		return resp.StatusCode, out
	}
	for state, id := range old.byState {
		if code, d := api("GET", "/deliveries/"+id, ""); code != 200 || d["id"] != id || (state != "in_flight" && state != "pending" && d["state"] != state) {
			t.Errorf("GET the old %s delivery %s: %d %v", state, id, code, d)
		}
	}
	// The key is found (through event_idempotency): this request is not the one that used it first.
	if code, p := api("POST", "/events", `{"event_type":"order.created","payload":{"n":10}}`, "Idempotency-Key", "key-10"); code != 400 ||
		!strings.Contains(fmt.Sprint(p), "already used") {
		t.Errorf("publish with an Idempotency-Key of the previous release: %d %v, want it known", code, p)
	}
	if code, d := api("POST", "/deliveries/"+old.byState["failed"]+"/retry", ""); code != 202 {
		t.Errorf("retry the old failed delivery: %d %v", code, d)
	}
	code, p := api("POST", "/events", `{"event_type":"order.created","payload":{"new":true}}`)
	if code != 202 {
		t.Fatalf("publish after the migration: %d %v", code, p)
	}
	fresh := p["deliveries"].([]any)[0].(map[string]any)["id"].(string)
	for _, id := range []string{old.byState["failed"], fresh} {
		eventually(t, 20*time.Second, func() string { return fmt.Sprintf("delivery %s not delivered", id) }, func() bool {
			_, d := api("GET", "/deliveries/"+id, "")
			return d["state"] == "delivered"
		})
	}
	if received.Load() < 2 {
		t.Errorf("the receiver got %d requests", received.Load())
	}
}
