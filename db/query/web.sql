-- name: DeleteExpiredSessions :execrows
-- Removes dashboard sessions (scs's pgxstore table) whose absolute or idle deadline has passed.
DELETE FROM sessions WHERE expiry < @now;
