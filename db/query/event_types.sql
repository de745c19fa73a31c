-- name: LockEventTypeCatalogue :one
-- Opens a change of the catalogue: raises its version in the changing transaction (other processes reload
-- when they see it move) and holds the row's lock until commit, so changes of the catalogue run one at a time.
UPDATE event_type_catalogue SET version = version + 1 WHERE id RETURNING version;

-- name: EventTypeCatalogueVersion :one
-- What each process polls: a change committed since its last load raised it.
SELECT version FROM event_type_catalogue WHERE id;

-- name: CreateEventType :one
-- Adds a type, or brings back an archived one with these fields; a live type of that name is left alone and
-- no row comes back.
INSERT INTO event_types (name, description, group_name, schema, example, deprecated, created_at, updated_at)
VALUES (sqlc.arg('name'), sqlc.arg('description'), sqlc.arg('group_name'), sqlc.narg('schema'), sqlc.narg('example'),
        sqlc.arg('deprecated'), sqlc.arg('now')::timestamptz, sqlc.arg('now')::timestamptz)
ON CONFLICT (name) DO UPDATE
   SET description = excluded.description, group_name = excluded.group_name, schema = excluded.schema,
       example = excluded.example, deprecated = excluded.deprecated, archived_at = NULL, updated_at = excluded.updated_at
 WHERE event_types.archived_at IS NOT NULL
RETURNING *;

-- name: GetEventType :one
SELECT * FROM event_types WHERE name = sqlc.arg('name');

-- name: ListEventTypes :many
-- The catalogue by group and name, the group's case aside (one group whatever its capitalisation; in byte
-- order, so it reads the same whatever the database's collation); archived types only when asked.
SELECT * FROM event_types
 WHERE sqlc.arg('include_archived')::boolean OR archived_at IS NULL
 ORDER BY lower(group_name) COLLATE "C", name COLLATE "C";

-- name: EventTypeGroupSpelling :one
-- How the catalogue spells a group (groups are one whatever their case): as its most recently changed type
-- does, live types first; except_name leaves one type out (the one being changed). No row: a new group.
SELECT group_name FROM event_types
 WHERE lower(group_name) = lower(sqlc.arg('group_name')) AND name <> sqlc.arg('except_name')
 ORDER BY archived_at IS NULL DESC, updated_at DESC, name COLLATE "C"
 LIMIT 1;

-- name: SpellEventTypeGroup :exec
-- Gives every type of a group (whatever its case) this spelling of it: an admin who names a group as
-- "Billing" renames "billing" for all of its types.
UPDATE event_types SET group_name = sqlc.arg('group_name'), updated_at = sqlc.arg('now')::timestamptz
 WHERE lower(group_name) = lower(sqlc.arg('group_name')) AND group_name <> sqlc.arg('group_name');

-- name: UpdateEventType :one
-- Replaces a type's fields (the caller merged the change into what it read, under the catalogue's lock);
-- restore also brings an archived type back.
UPDATE event_types
   SET description = sqlc.arg('description'), group_name = sqlc.arg('group_name'), schema = sqlc.narg('schema'),
       example = sqlc.narg('example'), deprecated = sqlc.arg('deprecated'),
       archived_at = CASE WHEN sqlc.arg('restore')::boolean THEN NULL ELSE archived_at END,
       updated_at = sqlc.arg('now')::timestamptz
 WHERE name = sqlc.arg('name')
RETURNING *;

-- name: ArchiveEventType :one
-- Archives a live type; an archived or unknown one gives no row.
UPDATE event_types SET archived_at = sqlc.arg('now')::timestamptz, updated_at = sqlc.arg('now')::timestamptz
 WHERE name = sqlc.arg('name') AND archived_at IS NULL
RETURNING *;
