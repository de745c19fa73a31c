-- +goose Up
-- login_throttle counts dashboard sign-in tries per email and per client address, in the database so that
-- every process sees the same counts (an in-memory limiter per process multiplied the allowance by the
-- number of processes). Each key is a token bucket kept as one timestamp (GCRA): allowed_at is when the
-- bucket would be full again; a try is allowed while allowed_at is at most (burst - 1) intervals ahead.
-- A row whose allowed_at has passed is a full bucket, the same as no row, and is deleted by maintenance.
CREATE TABLE login_throttle (
    key        text        PRIMARY KEY,
    allowed_at timestamptz NOT NULL
);
CREATE INDEX login_throttle_allowed_at_idx ON login_throttle (allowed_at);

-- +goose Down
DROP TABLE login_throttle;
