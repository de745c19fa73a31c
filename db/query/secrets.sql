-- Signing secrets and custom header values at rest (internal/secretbox). A stored value needs sealing
-- when it does not start with @prefix: 'enc:' finds plaintext ones (a key was just configured),
-- 'enc:v1:<first key id>:' every one not under the sealing key (server reencrypt). Batches go in id order
-- from @after so a value that cannot be changed is not fetched again and again.

-- name: SecretsToSeal :many
SELECT id, secret FROM subscription_secrets
WHERE id > @after AND NOT starts_with(secret, sqlc.arg('prefix')::text)
ORDER BY id
LIMIT sqlc.arg('max');

-- name: ReplaceStoredSecret :execrows
-- Compare-and-set, so a concurrent change of the row is never overwritten with an older value.
UPDATE subscription_secrets SET secret = sqlc.arg('new_secret')::text
WHERE id = @id AND secret = sqlc.arg('old_secret')::text;

-- name: HeadersToSeal :many
-- Deleted subscriptions too: their headers are as secret as anyone's.
SELECT id, headers FROM subscriptions
WHERE id > @after
  AND EXISTS (SELECT 1 FROM jsonb_each_text(headers) h WHERE NOT starts_with(h.value, sqlc.arg('prefix')::text))
ORDER BY id
LIMIT sqlc.arg('max');

-- name: ReplaceStoredHeaders :execrows
-- Compare-and-set, like ReplaceStoredSecret; updated_at stays: the customer changed nothing.
UPDATE subscriptions SET headers = sqlc.arg('new_headers')::jsonb
WHERE id = @id AND headers = sqlc.arg('old_headers')::jsonb;

-- name: CredentialsToSeal :many
-- Endpoint credentials (password, client_secret, private_key) are a JSON object of sealed strings like
-- custom headers, and sealed the same way.
SELECT id, credentials FROM subscriptions
WHERE id > @after
  AND EXISTS (SELECT 1 FROM jsonb_each_text(credentials) c WHERE NOT starts_with(c.value, sqlc.arg('prefix')::text))
ORDER BY id
LIMIT sqlc.arg('max');

-- name: ReplaceStoredCredentials :execrows
UPDATE subscriptions SET credentials = sqlc.arg('new_credentials')::jsonb
WHERE id = @id AND credentials = sqlc.arg('old_credentials')::jsonb;

-- name: CountSealedUnderOtherKeys :one
-- Stored values sealed under none of @prefixes (the configured keys' 'enc:v1:<id>:'): they cannot be
-- opened, so their deliveries wait; counted at start to say so.
SELECT
    (SELECT count(*) FROM subscription_secrets ss
     WHERE starts_with(ss.secret, 'enc:')
       AND NOT EXISTS (SELECT 1 FROM unnest(sqlc.arg('prefixes')::text[]) p WHERE starts_with(ss.secret, p)))::int AS secrets,
    (SELECT count(*) FROM subscriptions s
     WHERE EXISTS (SELECT 1 FROM (SELECT value FROM jsonb_each_text(s.headers)
                                  UNION ALL SELECT value FROM jsonb_each_text(s.credentials)) h
                   WHERE starts_with(h.value, 'enc:')
                     AND NOT EXISTS (SELECT 1 FROM unnest(sqlc.arg('prefixes')::text[]) p WHERE starts_with(h.value, p))))::int AS subscriptions;
