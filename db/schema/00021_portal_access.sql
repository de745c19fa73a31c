-- +goose Up
-- 1. Who made a portal link. A link grants no more than its maker holds (a token needs the scopes of the
--    role it hands out), the activity entries of its session's changes name the maker beside the person,
--    and revoking the token ends the sessions its links started. made_by_* are the maker as the activity
--    log names actors: kind 'token' (an API token, by id and name) or 'admin' (HOOKLINE_ADMIN_TOKEN, or
--    Hookline's own demo). made_by_token_id is the token's id, kept for its revocation. Links made before
--    this migration say 'admin' with no id: their maker was not recorded.
ALTER TABLE portal_links
    ADD COLUMN made_by_kind     text NOT NULL DEFAULT 'admin' CHECK (made_by_kind IN ('token', 'admin')),
    ADD COLUMN made_by_id       text NOT NULL DEFAULT '',
    ADD COLUMN made_by_name     text NOT NULL DEFAULT '',
    ADD COLUMN made_by_token_id uuid REFERENCES api_tokens (id) ON DELETE CASCADE;
CREATE INDEX portal_links_made_by_token_idx ON portal_links (made_by_token_id)
    WHERE made_by_token_id IS NOT NULL AND session_ended_at IS NULL;

-- 2. An activity entry made in a portal session names, beside the person (actor_*), who made the link
--    that let them in (actor_via_*, same kinds as made_by_*); empty for every other entry.
ALTER TABLE activity
    ADD COLUMN actor_via_kind text NOT NULL DEFAULT '' CHECK (actor_via_kind IN ('', 'token', 'admin')),
    ADD COLUMN actor_via_id   text NOT NULL DEFAULT '',
    ADD COLUMN actor_via_name text NOT NULL DEFAULT '';

-- 3. A dashboard session whose token was renewed (at sign-in, on opening a portal link, when a portal
--    session ends) is kept for a minute under its old token, with its old data, rather than deleted: a
--    request the browser sent before it got the new cookie, to this process or another, is then served as
--    before instead of landing on the sign-in form. renewed_at marks it: such a row is never written again
--    nor its expiry extended, and its token is never sent back as a cookie.
ALTER TABLE sessions ADD COLUMN renewed_at timestamptz;

-- +goose Down
ALTER TABLE sessions DROP COLUMN renewed_at;
ALTER TABLE activity DROP COLUMN actor_via_name, DROP COLUMN actor_via_id, DROP COLUMN actor_via_kind;
DROP INDEX portal_links_made_by_token_idx;
ALTER TABLE portal_links DROP COLUMN made_by_token_id, DROP COLUMN made_by_name, DROP COLUMN made_by_id,
    DROP COLUMN made_by_kind;
