-- +goose Up
-- The claim finds due rows per subscription (webhook_deliveries_sub_pending_idx) since fair share, so the
-- global pending index in due order is read by nothing; every delivery paid for it twice (insert as
-- pending, back to pending on a retry).
DROP INDEX webhook_deliveries_pending_idx;

-- +goose Down
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (next_attempt_at, id) WHERE state = 'pending';
