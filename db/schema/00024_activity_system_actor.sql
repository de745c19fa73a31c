-- +goose Up
-- Every change is recorded, also those Hookline makes by itself outside any request (the operator
-- notifications' subscription set up from HOOKLINE_OPERATOR_WEBHOOK_URL, the demo's seed): their actor is
-- 'system', named for what it was doing.
ALTER TABLE activity DROP CONSTRAINT activity_actor_kind_check,
    ADD CONSTRAINT activity_actor_kind_check CHECK (actor_kind IN ('user', 'portal', 'token', 'admin', 'system'));

-- +goose Down
DELETE FROM activity WHERE actor_kind = 'system';
ALTER TABLE activity DROP CONSTRAINT activity_actor_kind_check,
    ADD CONSTRAINT activity_actor_kind_check CHECK (actor_kind IN ('user', 'portal', 'token', 'admin'));
