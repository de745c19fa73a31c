-- +goose Up
-- The in-flight count of a subscription becomes two counters that only grow, on two rows, so that a claim
-- and a completion for the same subscription never wait for each other's row lock (they did: on a busy
-- endpoint every completion queued behind the claim holding the subscription row, and the other way round):
--   * subscriptions.claimed: attempts ever claimed; only claims add to it, on the row they lock anyway;
--   * subscription_finished.finished: claimed attempts that ended (recorded, released or rescued); only the
--     statements that end them add to it.
-- in flight = claimed - finished. A claim re-checks "claimed + n - finished <= cap" on the subscription row's
-- newest version; finished comes from the claim's snapshot and can only lag, which makes the claim see more
-- in flight than there is, never fewer: the cap holds across processes, as before.
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_in_flight_check;
ALTER TABLE subscriptions RENAME COLUMN in_flight TO claimed;
ALTER TABLE subscriptions ALTER COLUMN claimed TYPE bigint;
CREATE TABLE subscription_finished (
    subscription_id uuid   PRIMARY KEY REFERENCES subscriptions (id) ON DELETE CASCADE,
    finished        bigint NOT NULL DEFAULT 0
);

-- +goose Down
UPDATE subscriptions s SET claimed = s.claimed - f.finished FROM subscription_finished f WHERE f.subscription_id = s.id;
DROP TABLE subscription_finished;
ALTER TABLE subscriptions ALTER COLUMN claimed TYPE integer;
ALTER TABLE subscriptions RENAME COLUMN claimed TO in_flight;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_in_flight_check CHECK (in_flight >= 0);
