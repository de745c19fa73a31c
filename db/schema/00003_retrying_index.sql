-- +goose Up
-- Retrying deliveries (pending after at least one attempt) of a tenant, newest first. Without it, the
-- operator overview's capped count and the lists' "retrying" filter walk every never-tried pending row of
-- the tenant to find the retrying ones: 3 s at 600,000 such rows (BenchmarkOverviewAtScale).
CREATE INDEX webhook_deliveries_retrying_idx ON webhook_deliveries (tenant_id, created_at DESC, id DESC)
    WHERE state = 'pending' AND total_attempts > 0;

-- +goose Down
DROP INDEX webhook_deliveries_retrying_idx;
