-- +goose Up
-- event_types is the event catalogue: the types a platform publishes, each with a description, a group to
-- list it under, and optionally a JSON Schema its payloads must satisfy and an example payload. It is global
-- (one platform, many tenants), managed by the admin and read by any token. A type is never deleted, only
-- archived (archived_at): archived, it leaves the catalogue and its schema is no longer enforced.
-- schema and example are json, not jsonb: kept as the admin wrote them, so the order of properties (what
-- the dashboard lists) survives; nothing queries inside them.
CREATE TABLE event_types (
    name        text        PRIMARY KEY,
    description text        NOT NULL DEFAULT '',
    group_name  text        NOT NULL,
    schema      json,
    example     json,
    deprecated  boolean     NOT NULL DEFAULT false,
    archived_at timestamptz,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

-- event_type_catalogue holds one row: the catalogue's version, raised by every change in the changing
-- transaction. Each process polls it (a primary-key read) and reloads its compiled schemas when it moved,
-- so publishes never read the catalogue. Raising it first also serialises the catalogue's writers, so a
-- check made in a change (an example against the schema it will be stored with) holds at commit.
CREATE TABLE event_type_catalogue (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    version bigint  NOT NULL
);
INSERT INTO event_type_catalogue (id, version) VALUES (true, 0);

-- +goose Down
DROP TABLE event_type_catalogue;
DROP TABLE event_types;
