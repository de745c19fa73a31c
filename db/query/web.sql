-- name: DeleteExpiredSessions :execrows
-- Removes dashboard sessions (internal/web's session store) whose absolute or idle deadline has passed.
DELETE FROM sessions WHERE expiry < @now;

-- name: EventTenant :one
-- Which tenant an event belongs to: operators find any event by its id alone.
SELECT tenant_id FROM events WHERE id = @id;

-- name: RecentEventTypes :many
-- The event types among a tenant's (or one of its subscriptions') newest @up_to deliveries, for the
-- dashboard's event-type choice: an index range scan of at most @up_to entries, never the whole history.
SELECT DISTINCT r.event_type::text AS event_type FROM (
    SELECT d.event_type FROM webhook_deliveries d
    WHERE d.tenant_id = @tenant_id
      AND (sqlc.narg('subscription_id')::uuid IS NULL OR d.subscription_id = sqlc.narg('subscription_id')::uuid)
    ORDER BY d.created_at DESC, d.id DESC
    LIMIT @up_to::int
) r
ORDER BY 1;
