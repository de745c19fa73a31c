-- name: CreatePortalLink :one
INSERT INTO portal_links (tenant_id, token_hash, role, theme, user_id, user_email, user_name,
                          created_at, expires_at, session_expires_at,
                          made_by_kind, made_by_id, made_by_name, made_by_token_id)
VALUES (sqlc.arg('tenant_id'), sqlc.arg('token_hash'), sqlc.arg('role'), sqlc.arg('theme'), sqlc.arg('user_id'),
        sqlc.arg('user_email'), sqlc.arg('user_name'), sqlc.arg('now')::timestamptz, sqlc.arg('expires_at'),
        sqlc.arg('session_expires_at'), sqlc.arg('made_by_kind'), sqlc.arg('made_by_id'), sqlc.arg('made_by_name'),
        sqlc.narg('made_by_token_id'))
RETURNING id;

-- name: RedeemPortalLink :one
-- Uses a link, once: of concurrent redeems of one token only the first to lock the row finds used_at
-- NULL; the others (and any later one) get no row, as do expired, ended and unknown tokens.
UPDATE portal_links
   SET used_at = sqlc.arg('now')::timestamptz
 WHERE token_hash = sqlc.arg('token_hash')
   AND used_at IS NULL
   AND session_ended_at IS NULL
   AND expires_at > sqlc.arg('now')::timestamptz
RETURNING id, tenant_id, role, theme, user_id, user_email, user_name, session_expires_at,
          made_by_kind, made_by_id, made_by_name;

-- name: GetPortalSession :one
-- A redeemed link's session while it lasts; no row once it has ended or expired.
SELECT l.id, l.tenant_id, l.role, l.theme, l.user_id, l.user_email, l.user_name, l.session_expires_at,
       l.made_by_kind, l.made_by_id, l.made_by_name
  FROM portal_links l
 WHERE l.id = sqlc.arg('id')
   AND l.used_at IS NOT NULL
   AND l.session_ended_at IS NULL
   AND l.session_expires_at > sqlc.arg('now')::timestamptz;

-- name: EndPortalSession :exec
UPDATE portal_links SET session_ended_at = sqlc.arg('now')::timestamptz WHERE id = sqlc.arg('id') AND session_ended_at IS NULL;

-- name: EndTenantPortalSessions :execrows
-- Ends every session of a tenant and voids its links not used yet.
UPDATE portal_links SET session_ended_at = sqlc.arg('now')::timestamptz
 WHERE tenant_id = sqlc.arg('tenant_id') AND session_ended_at IS NULL;

-- name: PrunePortalLinks :execrows
-- Deletes links whose session can no longer run (expired, or never used within their 10 minutes).
DELETE FROM portal_links
 WHERE session_expires_at < sqlc.arg('before')
    OR (used_at IS NULL AND expires_at < sqlc.arg('before'));

-- name: EndTokenPortalSessions :execrows
-- Ends the sessions started by the links a token made, and voids its links not used yet: run in the
-- token's revocation, since a link grants no more than its maker, and a revoked token grants nothing.
UPDATE portal_links SET session_ended_at = sqlc.arg('now')::timestamptz
 WHERE made_by_token_id = sqlc.arg('token_id') AND session_ended_at IS NULL;
