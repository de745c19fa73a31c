-- +goose Up
-- Polling subscriptions: a subscription of type 'polling' has no URL (url is stored as ''); its deliveries
-- wait, pending, until one of its consumers pulls them (GET .../poll) and commits past them (POST
-- .../consumers/{name}/commit), which makes them delivered. No worker ever claims them.
--
-- Positions. A consumer's cursor is a position in the subscription's deliveries, (poll_xid, id), and a
-- poll answers the deliveries after it in that order. poll_xid is the id of the transaction that made the
-- delivery pending (pg_current_xact_id(): the publish, or the resend or replay that queued it again), set
-- only on polling subscriptions' deliveries. A poll only answers rows whose poll_xid is below its
-- snapshot's xmin: every transaction below xmin has ended, and any transaction still running, or yet to
-- start, has an xid at or above it. So no row can ever appear at a position before a cursor a poll gave
-- out: a cursor never passes a delivery whose transaction commits after the poll. (Ordering by the id, or
-- by a sequence, would not do: a publish that took its id or number first can commit last.) Rows of a
-- transaction still running wait for the next poll; a long transaction anywhere on the server holds polls
-- back until it ends (see docs/contract.md). xid8 values (64-bit, never wrapping) are kept as bigint,
-- which compares the same and needs no special type in the generated code.
-- Every column is added without a rewrite (no volatile default), so the ALTERs are catalog work.
ALTER TABLE subscriptions ADD COLUMN type text NOT NULL DEFAULT 'webhook'
    CONSTRAINT subscriptions_type_check CHECK (type IN ('webhook', 'polling'));

ALTER TABLE webhook_deliveries ADD COLUMN poll_xid bigint;

-- consumer names the polling consumer whose commit delivered the delivery (NULL for an HTTP attempt).
ALTER TABLE webhook_attempts ADD COLUMN consumer text;

-- A poll's walk: one subscription's rows in position order, in the queue and in the finished partitions
-- (made on the partitioned parent, so every partition, and every partition made later, has it).
CREATE INDEX webhook_deliveries_sub_poll_idx ON webhook_deliveries (subscription_id, poll_xid, id)
    WHERE poll_xid IS NOT NULL;

-- subscription_consumers are the consumers of polling subscriptions, each with its own cursor. A consumer
-- is made by its first poll (at the position just before the subscription's oldest delivery not yet
-- delivered) or by its first commit. position is the committed cursor; given is the furthest position a
-- poll handed this consumer (a commit beyond it is refused).
CREATE TABLE subscription_consumers (
    subscription_id uuid        NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    tenant_id       uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name            text        NOT NULL CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
    position_xid    bigint      NOT NULL,
    position_id     uuid        NOT NULL,
    given_xid       bigint      NOT NULL,
    given_id        uuid        NOT NULL,
    committed_at    timestamptz,
    last_polled_at  timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subscription_id, name)
);

-- +goose Down
DROP TABLE subscription_consumers;
DROP INDEX webhook_deliveries_sub_poll_idx;
ALTER TABLE webhook_attempts DROP COLUMN consumer;
ALTER TABLE webhook_deliveries DROP COLUMN poll_xid;
ALTER TABLE subscriptions DROP COLUMN type;
