-- +goose Up
-- password_version counts the passwords an operator has set for a user (tenants.SetPassword); a dashboard
-- session remembers the version it signed in with and ends when it changes. Start-up's upsert of the
-- configured logins leaves it alone (it rehashes the same password at every start).
ALTER TABLE users ADD COLUMN password_version integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE users DROP COLUMN password_version;
