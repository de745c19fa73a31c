-- +goose Up
-- Ordered delivery per key. A subscription with ordered = true attempts the deliveries of one ordering key
-- one at a time, in publish order. Only the key's head (the earliest delivery not yet finished) may be
-- claimed; the ones behind it wait in the queue "parked": pending, due at the far future (parked_until(),
-- below), so the claim, which takes due rows only, never sees them and is unchanged. When the head finishes
-- (delivered; dead, with on_dead = 'skip'; discarded) the next one by ordering_seq is released: due now,
-- with a fresh retry window. With on_dead = 'block' a dead head holds its key until it is delivered by a
-- resend or a replay, or discarded.
-- Every column is added without a rewrite (no volatile default), so the columns are catalog work; the
-- index is built on every partition of the history (most of it empty of pending rows).
ALTER TABLE subscriptions
    ADD COLUMN ordered boolean NOT NULL DEFAULT false,
    ADD COLUMN on_dead text NOT NULL DEFAULT 'skip' CHECK (on_dead IN ('skip', 'block'));

-- ordering_key is the event's key (kept on each of its deliveries, ordered subscription or not: pages show
-- it); ordering_seq is the delivery's place in its key on an ordered subscription (NULL otherwise).
ALTER TABLE webhook_deliveries
    ADD COLUMN ordering_key text,
    ADD COLUMN ordering_seq bigint;

-- One row per (ordered subscription, key) ever published to: published counts the key's deliveries (the
-- last ordering_seq given), head_id is the delivery that holds the key now (NULL when every delivery of
-- the key is finished), head_seq its ordering_seq. The row is the key's lock: a publish and a release of
-- the same key take it in turn, so a delivery is parked exactly when an earlier one holds the key.
CREATE TABLE ordering_keys (
    subscription_id uuid        NOT NULL,
    ordering_key    text        NOT NULL,
    tenant_id       uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    published       bigint      NOT NULL,
    head_id         uuid,
    head_seq        bigint,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (subscription_id, ordering_key)
-- Every delivery of an ordered key updates its row twice (publish, release): with room on its page and no
-- index but the key's, the update stays on the page (HOT) and writes no index entry.
) WITH (fillfactor = 70);

-- The next delivery of a key: the parked one with the lowest ordering_seq.
CREATE INDEX webhook_deliveries_ordering_idx ON webhook_deliveries (subscription_id, ordering_key, ordering_seq)
    WHERE state = 'pending' AND ordering_seq IS NOT NULL;

-- parked_until is when a parked delivery is "due": never, in practice. A finite time, not 'infinity',
-- because the application reads next_attempt_at into Go times, which have no infinity.
-- +goose StatementBegin
CREATE FUNCTION parked_until() RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '9999-12-31 00:00:00+00'::timestamptz;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION parked_until();
DROP INDEX webhook_deliveries_ordering_idx;
DROP TABLE ordering_keys;
ALTER TABLE webhook_deliveries DROP COLUMN ordering_seq, DROP COLUMN ordering_key;
ALTER TABLE subscriptions DROP COLUMN on_dead, DROP COLUMN ordered;
