-- name: ClaimNotifications :many
-- Claims up to @max_rows due customer emails for one sender: attempts is counted now and next_attempt_at
-- moved to @lease_until, so another notifier (or this one's next run) leaves them alone while they are
-- being sent, and a sender that dies mid-send hands them back once the lease runs out. SKIP LOCKED lets
-- concurrent claims take disjoint rows instead of waiting on each other.
UPDATE notifications n SET attempts = n.attempts + 1, next_attempt_at = sqlc.arg('lease_until')::timestamptz
WHERE n.id IN (
    SELECT d.id FROM notifications d
    WHERE d.sent_at IS NULL AND d.next_attempt_at <= sqlc.arg('now')::timestamptz
    ORDER BY d.next_attempt_at
    LIMIT sqlc.arg('max_rows')
    FOR UPDATE SKIP LOCKED
)
RETURNING n.*;

-- name: MarkNotificationSent :exec
UPDATE notifications SET sent_at = sqlc.arg('now')::timestamptz, last_error = ''
WHERE id = sqlc.arg('id') AND sent_at IS NULL;

-- name: RetryNotification :execrows
-- Schedules the next attempt after a failed send. Guarded by the attempt it claimed, so a sender whose
-- lease ran out does not move a row another sender has claimed since.
UPDATE notifications SET next_attempt_at = sqlc.arg('next_attempt_at')::timestamptz, last_error = sqlc.arg('last_error')
WHERE id = sqlc.arg('id') AND attempts = sqlc.arg('attempts') AND sent_at IS NULL;

-- name: GiveUpNotification :execrows
-- Stops retrying a message: never due again ('infinity'), not sent, last_error says why.
UPDATE notifications SET next_attempt_at = 'infinity', last_error = sqlc.arg('last_error')
WHERE id = sqlc.arg('id') AND attempts = sqlc.arg('attempts') AND sent_at IS NULL;

-- name: SkipDueNotifications :execrows
-- Without a mail server, due messages are set aside (never due again) with the reason, rather than kept
-- queued: an incident email sent days later, once SMTP is configured, would tell a stale story.
UPDATE notifications SET next_attempt_at = 'infinity', last_error = sqlc.arg('last_error')
WHERE sent_at IS NULL AND next_attempt_at <= sqlc.arg('now')::timestamptz;

-- name: PruneNotifications :execrows
-- Deletes finished messages (sent, or given up) created before @before, a batch at a time.
DELETE FROM notifications WHERE id IN (
    SELECT id FROM notifications
    WHERE created_at < sqlc.arg('before')::timestamptz AND (sent_at IS NOT NULL OR next_attempt_at = 'infinity')
    LIMIT sqlc.arg('max_rows')
);
