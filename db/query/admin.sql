-- name: TenantOverview :many
-- The operator overview: every tenant with its live subscriptions and capped counts of its pending,
-- retrying (pending after an attempt) and dead deliveries and of its attempts since @since. Each count is a
-- LATERAL subquery that stops at @up_to rows, so a tenant with millions of rows costs at most @up_to index
-- entries per count. The lateral subqueries are planned once for every tenant, from the table's overall
-- statistics; when one tenant owns most rows, PostgreSQL would pick a sequential scan that finds its
-- @up_to rows at once but reads the whole table for each of the others. Each subquery therefore orders by
-- its index's key, which makes the index the only cheap plan: pending walks
-- webhook_deliveries_tenant_pending_idx, retrying webhook_deliveries_retrying_idx, dead the dead-letter
-- partial index webhook_deliveries_dead_idx, and attempts webhook_attempts_sub_started_idx once per
-- subscription of the tenant (deleted ones included: their recent attempts happened).
SELECT t.id, t.name, t.created_at,
       subs.n AS subscriptions, pending.n AS pending, retrying.n AS retrying, dead.n AS dead,
       attempts.n AS attempts
FROM tenants t
CROSS JOIN LATERAL (
    SELECT count(*)::int AS n FROM subscriptions s WHERE s.tenant_id = t.id AND s.deleted_at IS NULL
) subs
CROSS JOIN LATERAL (
    SELECT count(*)::int AS n FROM (
        SELECT 1 FROM webhook_deliveries d WHERE d.tenant_id = t.id AND d.state = 'pending'
        ORDER BY d.created_at DESC, d.id DESC LIMIT @up_to::int
    ) m
) pending
CROSS JOIN LATERAL (
    SELECT count(*)::int AS n FROM (
        SELECT 1 FROM webhook_deliveries d
        WHERE d.tenant_id = t.id AND d.state = 'pending' AND d.total_attempts > 0
        ORDER BY d.created_at DESC, d.id DESC LIMIT @up_to::int
    ) m
) retrying
CROSS JOIN LATERAL (
    SELECT count(*)::int AS n FROM (
        SELECT 1 FROM webhook_deliveries d
        WHERE d.tenant_id = t.id AND d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
        ORDER BY d.created_at DESC, d.id DESC LIMIT @up_to::int
    ) m
) dead
CROSS JOIN LATERAL (
    -- One cap for all of the tenant's subscriptions together: capping each one and adding up read up to
    -- @up_to entries per subscription (100,000 for ten busy ones) to show one capped number.
    SELECT count(*)::int AS n FROM (
        SELECT 1 FROM subscriptions s
        CROSS JOIN LATERAL (
            SELECT 1 FROM webhook_attempts a
            WHERE a.subscription_id = s.id AND a.started_at >= @since::timestamptz
            ORDER BY a.started_at LIMIT @up_to::int
        ) x
        WHERE s.tenant_id = t.id
        LIMIT @up_to::int
    ) m
) attempts
WHERE NOT t.internal
ORDER BY t.name, t.id;

-- name: SubscriptionTenant :one
-- Whose a live subscription is, for operators who open any subscription by its id.
SELECT tenant_id FROM subscriptions WHERE id = @id AND deleted_at IS NULL;
