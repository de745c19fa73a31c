-- name: CreateTenant :one
INSERT INTO tenants (name) VALUES (@name) RETURNING *;

-- name: GetTenant :one
SELECT * FROM tenants WHERE id = @id;

-- name: ListTenants :many
-- The customers: Hookline's own internal tenant (operator notifications) is not one of them.
SELECT * FROM tenants WHERE NOT internal ORDER BY created_at, id;

-- name: CreateAPIToken :one
INSERT INTO api_tokens (tenant_id, name, token_hash, scopes)
VALUES (@tenant_id, @name, @token_hash, @scopes) RETURNING *;

-- name: GetAPITokenByHash :one
SELECT * FROM api_tokens WHERE token_hash = @token_hash AND revoked_at IS NULL;

-- name: UpsertUser :one
INSERT INTO users (tenant_id, email, password_hash, is_admin)
VALUES (@tenant_id, @email, @password_hash, @is_admin)
ON CONFLICT (lower(email)) DO UPDATE
SET tenant_id = excluded.tenant_id, password_hash = excluded.password_hash, is_admin = excluded.is_admin,
    updated_at = now()
RETURNING *;

-- name: CreateUser :one
INSERT INTO users (tenant_id, email, password_hash, is_admin)
VALUES (@tenant_id, @email, @password_hash, @is_admin)
RETURNING *;

-- name: GetUserByEmail :one
SELECT * FROM users WHERE lower(email) = lower(@email);

-- name: GetUser :one
SELECT * FROM users WHERE id = @id;

-- name: GetTenantByName :one
SELECT * FROM tenants WHERE name = @name ORDER BY created_at LIMIT 1;

-- name: ListAPITokens :many
-- A tenant's live tokens (never their value: only its hash is stored).
SELECT id, name, scopes, created_at, last_used_at FROM api_tokens
WHERE tenant_id = @tenant_id AND revoked_at IS NULL
ORDER BY created_at, id;

-- name: TokenNames :many
-- The names of some of a tenant's API tokens, revoked ones included (the activity log names the tokens its
-- entries are about, also once revoked).
SELECT id, name, revoked_at FROM api_tokens WHERE tenant_id = @tenant_id AND id = ANY(@ids::uuid[]);

-- name: RevokeAPIToken :one
UPDATE api_tokens SET revoked_at = @now::timestamptz
WHERE id = @id AND tenant_id = @tenant_id AND revoked_at IS NULL
RETURNING id;

-- name: TouchAPIToken :exec
-- Records that a token was used, at most once a minute per token (a write per API request would cost more
-- than the request).
UPDATE api_tokens SET last_used_at = @now::timestamptz
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < sqlc.arg('now')::timestamptz - make_interval(0, 0, 0, 0, 0, 1));

-- name: ListTenantUsers :many
-- A tenant's dashboard logins, for the operator's page (never their password hashes).
SELECT id, tenant_id, email, is_admin, created_at FROM users
WHERE tenant_id = @tenant_id
ORDER BY lower(email), id;

-- name: DeleteTenantUser :one
-- Removes one of a tenant's customer logins, returning its email (the activity entry names whom it removed).
-- Operators (is_admin) are managed by HOOKLINE_ADMIN_EMAIL.
DELETE FROM users WHERE id = @id AND tenant_id = @tenant_id AND NOT is_admin
RETURNING email;

-- name: UserEmails :many
-- The emails of some of a tenant's dashboard logins (the activity log names the users its entries are about).
SELECT id, email FROM users WHERE tenant_id = @tenant_id AND id = ANY(@ids::uuid[]);

-- name: SetTenantUserPassword :one
UPDATE users SET password_hash = @password_hash, password_version = password_version + 1, updated_at = now()
WHERE id = @id AND tenant_id = @tenant_id AND NOT is_admin
RETURNING id;

-- name: ListenForTokenRevocations :exec
-- Every process's token listener (tenants.Service.StartListening): revocations and their acknowledgements.
LISTEN hookline_tokens;

-- name: NotifyTokens :exec
-- "revoked:<token id>:<nonce>" from a revocation's transaction (so it is sent at its commit, never before);
-- "ack:<nonce>" from each listener once it has dropped the token from its cache.
SELECT pg_notify('hookline_tokens', @payload::text);

-- name: CountTokenListeners :one
-- The processes listening for token revocations on this database: each listener connection names itself
-- by its application_name. A revocation waits for that many acknowledgements.
SELECT count(*) FROM pg_catalog.pg_stat_activity
WHERE datname = current_database() AND application_name = @application_name::text;

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
