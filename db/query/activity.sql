-- The activity log (internal/activity): written in the transaction of the change it records.

-- name: RecordActivity :exec
INSERT INTO activity (tenant_id, at, action, object_type, object_id, actor_kind, actor_id, actor_email,
                      actor_name, actor_via_kind, actor_via_id, actor_via_name, correlation_id, details)
VALUES (@tenant_id, @at, @action, @object_type, @object_id, @actor_kind, @actor_id, @actor_email,
        @actor_name, @actor_via_kind, @actor_via_id, @actor_via_name, @correlation_id, @details);

-- name: ListActivity :many
-- A tenant's entries newest first, keyset-paginated on (at, id) like the deliveries list; NULL filters
-- are folded away at plan time. since is inclusive, until exclusive.
SELECT * FROM activity
WHERE tenant_id = @tenant_id
  AND (sqlc.narg('action')::text IS NULL OR action = sqlc.narg('action')::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (at, id) < (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_id')::uuid))
ORDER BY at DESC, id DESC
LIMIT @max_rows::int;

-- name: DeleteActivityBefore :execrows
-- Deletes up to max entries older than cutoff, oldest first (the retention sweep, in batches).
DELETE FROM activity
WHERE id IN (SELECT id FROM activity WHERE at < @cutoff::timestamptz ORDER BY at LIMIT @max::int);
