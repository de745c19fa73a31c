-- +goose Up
-- The manual resend limit (HOOKLINE_RESEND_PER_MINUTE per subscription) as a token bucket on the
-- subscription row, so it holds across processes like the outgoing rate limit.
ALTER TABLE subscriptions
    ADD COLUMN resend_tokens     double precision,
    ADD COLUMN resend_counted_at timestamptz;

-- bucket_tokens_at is a token bucket holding at most `capacity`, refilled at `per_second`, as it is at
-- `at` when it held `tokens` at `counted_at` (a bucket never used is full).
-- +goose StatementBegin
CREATE FUNCTION bucket_tokens_at(capacity double precision, per_second double precision, tokens double precision,
                                 counted_at timestamptz, at timestamptz)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
  SELECT least(capacity, coalesce(tokens, capacity)
                         + per_second * greatest(extract(epoch FROM at - coalesce(counted_at, at)), 0))
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION bucket_tokens_at(double precision, double precision, double precision, timestamptz, timestamptz);
ALTER TABLE subscriptions DROP COLUMN resend_tokens, DROP COLUMN resend_counted_at;
