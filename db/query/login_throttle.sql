-- name: ReserveLoginTry :one
-- Spends one try of a key's bucket, atomically: a new key starts full (allowed_at = now + interval); an
-- existing one is allowed while allowed_at <= limit_at (now + (burst - 1) intervals), and then moves one
-- interval later, from now at the earliest. A refused try changes nothing and returns no row. Concurrent
-- tries of one key queue on its row, so a burst of parallel requests cannot all pass.
INSERT INTO login_throttle AS t (key, allowed_at)
VALUES (sqlc.arg('key'), sqlc.arg('next_at')::timestamptz)
ON CONFLICT (key) DO UPDATE
    SET allowed_at = greatest(t.allowed_at + sqlc.arg('every')::interval, excluded.allowed_at)
    WHERE t.allowed_at <= sqlc.arg('limit_at')::timestamptz
RETURNING allowed_at;

-- name: LoginThrottleState :many
-- The buckets of the keys, to tell a refused sign-in how long to wait.
SELECT key, allowed_at FROM login_throttle WHERE key = ANY(sqlc.arg('keys')::text[]);

-- name: ReleaseLoginTry :exec
-- Gives a key's try back (a sign-in that succeeded).
UPDATE login_throttle SET allowed_at = allowed_at - sqlc.arg('every')::interval WHERE key = sqlc.arg('key');

-- name: ForgetLoginKey :exec
-- Forgets a key's failures (an email that signed in).
DELETE FROM login_throttle WHERE key = sqlc.arg('key');

-- name: DeleteFullLoginBuckets :execrows
-- Removes buckets that have refilled: the same as no row.
DELETE FROM login_throttle WHERE allowed_at < sqlc.arg('now')::timestamptz;
