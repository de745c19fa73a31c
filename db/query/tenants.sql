-- name: CreateTenant :one
INSERT INTO tenants (name) VALUES (@name) RETURNING *;

-- name: GetTenant :one
SELECT * FROM tenants WHERE id = @id;

-- name: ListTenants :many
SELECT * FROM tenants ORDER BY created_at, id;

-- name: CreateAPIToken :one
INSERT INTO api_tokens (tenant_id, name, token_hash, scopes)
VALUES (@tenant_id, @name, @token_hash, @scopes) RETURNING *;

-- name: GetAPITokenByHash :one
SELECT * FROM api_tokens WHERE token_hash = @token_hash AND revoked_at IS NULL;

-- name: UpsertUser :one
INSERT INTO users (tenant_id, email, password_hash, is_admin)
VALUES (@tenant_id, @email, @password_hash, @is_admin)
ON CONFLICT (lower(email)) DO UPDATE
SET tenant_id = excluded.tenant_id, password_hash = excluded.password_hash, is_admin = excluded.is_admin,
    updated_at = now()
RETURNING *;

-- name: CreateUser :one
INSERT INTO users (tenant_id, email, password_hash, is_admin)
VALUES (@tenant_id, @email, @password_hash, @is_admin)
RETURNING *;

-- name: GetUserByEmail :one
SELECT * FROM users WHERE lower(email) = lower(@email);

-- name: GetUser :one
SELECT * FROM users WHERE id = @id;

-- name: GetTenantByName :one
SELECT * FROM tenants WHERE name = @name ORDER BY created_at LIMIT 1;
