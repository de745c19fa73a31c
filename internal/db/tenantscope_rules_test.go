package db_test

import "testing"

// The checker itself, on statements written to be caught or passed: each case is one rule of
// TestEveryQueryNamesTheTenant (see tenantscope_test.go), so a checker that stopped seeing a missing tenant
// fails here and not only on some future query.
func TestTenantScopeRules(t *testing.T) {
	s := newSchema(map[string][]string{
		"tenants":              {"id", "name"},
		"subscriptions":        {"id", "tenant_id", "url"},
		"subscription_secrets": {"id", "subscription_id", "secret"},
		"events":               {"id", "tenant_id", "body"},
		"webhook_deliveries":   {"id", "tenant_id", "event_id", "subscription_id", "state"},
		"api_tokens":           {"id", "tenant_id", "token_hash"},
	}, map[string]string{"webhook_deliveries_queue": "webhook_deliveries"})
	cases := []struct{ want, sql string }{
		{"across tenants", `SELECT * FROM webhook_deliveries WHERE id = @id`},
		{"tenant", `SELECT * FROM webhook_deliveries WHERE id = @id AND tenant_id = @tenant_id`},
		{"tenant", `SELECT * FROM webhook_deliveries WHERE (tenant_id, id) = (@tenant_id, @id)`},
		{"tenant", `SELECT * FROM webhook_deliveries WHERE tenant_id = sqlc.arg('tenant_id')::uuid`},
		{"tenant", `SELECT * FROM webhook_deliveries WHERE tenant_id = ANY(@tenant_ids::uuid[])`},
		{"tenant", `SELECT * FROM webhook_deliveries WHERE tenant_id IN ($1, $2)`},
		// behind an OR (an optional filter), or compared with itself, it restricts nothing
		{"across tenants", `SELECT * FROM webhook_deliveries WHERE id = @id OR tenant_id = @tenant_id`},
		{"across tenants", `SELECT * FROM webhook_deliveries WHERE (sqlc.narg('t')::uuid IS NULL OR tenant_id = sqlc.narg('t'))`},
		{"across tenants", `SELECT * FROM webhook_deliveries d WHERE d.tenant_id = d.tenant_id`},
		// a partition is its table; a statement other than DML that names a tenant's table is unpinned
		{"across tenants", `SELECT * FROM webhook_deliveries_queue WHERE id = @id`},
		{"across tenants", `VACUUM webhook_deliveries`},
		// tables without a tenant, or kept on the coordinator, need none
		{"tenant", `SELECT * FROM tenants`},
		{"tenant", `SELECT * FROM api_tokens WHERE token_hash = @h`},
		// joins: on tenant_id pins, by key only ties
		{"by key", `SELECT d.id FROM webhook_deliveries d JOIN subscriptions s ON s.id = d.subscription_id WHERE d.tenant_id = @t`},
		{"tenant", `SELECT d.id FROM webhook_deliveries d JOIN subscriptions s ON s.id = d.subscription_id AND s.tenant_id = d.tenant_id WHERE d.tenant_id = @t`},
		{"tenant", `SELECT d.id FROM webhook_deliveries d JOIN tenants t ON t.id = d.tenant_id WHERE t.id = @t`},
		{"across tenants", `SELECT d.id FROM webhook_deliveries d JOIN tenants t ON t.id = d.tenant_id`},
		// an outer join's condition restricts its nullable side only
		{"across tenants", `SELECT d.id FROM subscriptions s LEFT JOIN webhook_deliveries d ON d.subscription_id = s.id AND s.tenant_id = @t`},
		{"by key", `SELECT d.id FROM subscriptions s LEFT JOIN webhook_deliveries d ON d.subscription_id = s.id WHERE s.tenant_id = @t`},
		// a sub-select's condition restricts the sub-select, not the outer rows
		{"across tenants", `SELECT s.id, (SELECT count(*) FROM webhook_deliveries d WHERE d.tenant_id = @t AND d.subscription_id = s.id) FROM subscriptions s`},
		{"tenant", `SELECT s.id, (SELECT count(*) FROM webhook_deliveries d WHERE d.tenant_id = s.tenant_id) FROM subscriptions s WHERE s.tenant_id = @t`},
		{"across tenants", `SELECT * FROM webhook_deliveries d WHERE d.tenant_id = (SELECT s.tenant_id FROM subscriptions s WHERE s.id = @s)`},
		{"across tenants", `SELECT * FROM webhook_deliveries WHERE tenant_id IN (SELECT id FROM tenants)`},
		{"tenant", `SELECT * FROM webhook_deliveries WHERE tenant_id IN (SELECT id FROM tenants WHERE id = @t)`},
		// CTEs and sub-selects in FROM carry what they read
		{"by key", `WITH mine AS (SELECT id FROM subscriptions WHERE tenant_id = @t) SELECT d.id FROM webhook_deliveries d JOIN mine m ON m.id = d.subscription_id`},
		{"across tenants", `WITH every AS (SELECT id, tenant_id FROM subscriptions) SELECT d.id FROM webhook_deliveries d JOIN every e ON e.tenant_id = d.tenant_id`},
		{"tenant", `WITH input AS (SELECT unnest(@tenant_ids::uuid[]) AS tenant_id) SELECT d.id FROM webhook_deliveries d JOIN input i ON i.tenant_id = d.tenant_id`},
		{"tenant", `SELECT x.id FROM (SELECT id FROM webhook_deliveries WHERE tenant_id = @t) x`},
		// writes
		{"tenant", `INSERT INTO events (tenant_id, body) VALUES (@tenant_id, @body)`},
		{"across tenants", `INSERT INTO events (id, body) VALUES (@id, @body)`},
		{"across tenants", `INSERT INTO subscription_secrets (subscription_id, secret) VALUES (@s, @x)`},
		{"by key", `INSERT INTO subscription_secrets (subscription_id, secret) SELECT s.id, @x FROM subscriptions s WHERE s.id = @s AND s.tenant_id = @t`},
		{"tenant", `UPDATE webhook_deliveries SET state = 'pending' WHERE id = @id AND tenant_id = @t`},
		{"across tenants", `UPDATE webhook_deliveries SET state = 'pending' WHERE id = @id`},
		{"tenant", `DELETE FROM webhook_deliveries d USING subscriptions s WHERE s.tenant_id = @t AND d.tenant_id = s.tenant_id`},
		{"across tenants", `DELETE FROM webhook_deliveries d USING subscriptions s WHERE s.tenant_id = @t AND d.subscription_id <> s.id`},
	}
	for _, c := range cases {
		st, err := analyse(s, c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if got := verdict(st); got != c.want {
			t.Errorf("%s\n\tgot %s (%s), want %s", c.sql, got, st.describe(), c.want)
		}
	}
}
