-- Leader election and sweeps hold PostgreSQL session advisory locks (internal/maintenance, internal/retention).

-- name: TryAdvisoryLock :one
-- Takes the session-level advisory lock key if nobody holds it; it stays held until unlocked or the session ends.
SELECT pg_try_advisory_lock(@key::bigint)::boolean;

-- name: AdvisoryUnlock :one
SELECT pg_advisory_unlock(@key::bigint)::boolean;

-- name: HoldsAdvisoryLock :one
-- Whether this session still holds the advisory lock key (a bigint key is classid = high 32 bits,
-- objid = low 32 bits, objsubid = 1).
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks
    WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted AND objsubid = 1
      AND classid = ((@key::bigint >> 32) & 4294967295)::oid AND objid = (@key::bigint & 4294967295)::oid
)::boolean;

-- name: SetIdleSessionTimeout :exec
-- Makes the server end this session when it stays idle longer than the value (PostgreSQL 14+), so a leader
-- whose host vanished without closing its socket gives the lock up within that time.
SELECT set_config('idle_session_timeout', @value::text, false);
