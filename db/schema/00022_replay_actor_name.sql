-- +goose Up
-- actor_name is how pages name the person who started a replay or recover: the name a portal link gave,
-- else the email, as the activity log's actor says it ('' when the replay was not started by a person in
-- a request). actor stays the audit's identifier ("portal:<the platform's user id>", an email, "admin
-- token"). Recovers started before this column came take the name their activity entry recorded.
ALTER TABLE replays ADD COLUMN actor_name text NOT NULL DEFAULT '';
UPDATE replays r
SET actor_name = coalesce(nullif(a.actor_name, ''), nullif(a.actor_email, ''), '')
FROM activity a
WHERE r.kind = 'recover' AND a.tenant_id = r.tenant_id AND a.action = 'recover.started'
  AND a.object_type = 'recover' AND a.object_id = r.id::text;

-- +goose Down
ALTER TABLE replays DROP COLUMN actor_name;
