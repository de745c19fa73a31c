-- Dashboard sessions (internal/web's session store for scs): one row per session token.

-- name: FindSession :one
-- A live session's data; renewed says its token was renewed (RetireSession): the request is served from it
-- but nothing is written back under that token.
SELECT data, (renewed_at IS NOT NULL)::boolean AS renewed FROM sessions
WHERE token = @token AND expiry > now();

-- name: CommitSession :exec
-- Stores a session's data. A renewed (retired) row is never written again, so a late request under the
-- old token cannot extend it or change it.
INSERT INTO sessions (token, data, expiry) VALUES (@token, @data, @expiry)
ON CONFLICT (token) DO UPDATE SET data = excluded.data, expiry = excluded.expiry
WHERE sessions.renewed_at IS NULL;

-- name: DeleteSession :exec
DELETE FROM sessions WHERE token = @token;

-- name: RetireSession :exec
-- A token renewed: its row stays, with its data, for at most grace_seconds, for the requests the browser
-- sent before it got the new token.
UPDATE sessions SET renewed_at = now(), expiry = least(expiry, now() + make_interval(secs => @grace_seconds::float8))
WHERE token = @token AND renewed_at IS NULL;

-- name: DeleteExpiredSessions :execrows
-- Removes dashboard sessions (internal/web's session store) whose absolute or idle deadline has passed.
DELETE FROM sessions WHERE expiry < @now;
