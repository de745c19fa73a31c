-- +goose Up
-- Fair share and endpoint protection: the claim works subscription by subscription, each capped at
-- HOOKLINE_ENDPOINT_CONCURRENCY attempts in flight across every process, skipping subscriptions that are
-- paused, disabled or whose circuit is open; outgoing rate limits are token buckets kept on the row, so they
-- hold across processes too.

-- in_flight counts the subscription's deliveries in state in_flight. Every statement that moves a delivery
-- into or out of in_flight changes it in the same statement (claim, complete, release, rescue), so it is
-- exact; the claim's guard "in_flight + n <= cap" is re-checked on the row's newest version, which is what
-- makes the cap hold across processes.
ALTER TABLE subscriptions
    ADD COLUMN in_flight              integer     NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
    -- When an open (or lost half-open) circuit may send its next probe, and how long that wait was (it
    -- doubles after each failed probe).
    ADD COLUMN circuit_probe_at       timestamptz,
    ADD COLUMN circuit_probe_ms       integer,
    -- Outgoing rate limit (rate_limit_per_second): tokens left and when they were counted.
    ADD COLUMN rate_tokens            double precision,
    ADD COLUMN rate_counted_at        timestamptz;
-- rate_tokens_at is a subscription's outgoing rate-limit bucket at a moment: it refills at `rate` tokens a
-- second up to `rate` (one second's burst). NULL when the subscription has no limit.
-- +goose StatementBegin
CREATE FUNCTION rate_tokens_at(rate integer, tokens double precision, counted_at timestamptz, at timestamptz)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN rate IS NULL THEN NULL
              ELSE least(rate::float8, coalesce(tokens, rate::float8)
                                       + rate * greatest(extract(epoch FROM at - coalesce(counted_at, at)), 0)) END
$$;
-- +goose StatementEnd

UPDATE subscriptions s
SET in_flight = (SELECT count(*) FROM webhook_deliveries d WHERE d.subscription_id = s.id AND d.state = 'in_flight');

-- The claim's view of the queue: one subscription's pending deliveries in due order. It finds each
-- subscription's earliest due delivery, and its next few, without reading any other subscription's rows,
-- however large their backlog.
CREATE INDEX webhook_deliveries_sub_pending_idx ON webhook_deliveries (subscription_id, next_attempt_at, id)
    WHERE state = 'pending';

-- +goose Down
DROP INDEX webhook_deliveries_sub_pending_idx;
DROP FUNCTION rate_tokens_at(integer, double precision, timestamptz, timestamptz);
ALTER TABLE subscriptions DROP COLUMN in_flight, DROP COLUMN circuit_probe_at, DROP COLUMN circuit_probe_ms,
    DROP COLUMN rate_tokens, DROP COLUMN rate_counted_at;
