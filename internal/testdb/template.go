package testdb

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db/schema"
)

// migratedTemplate returns the name of a database on admin's server holding every migration of this
// build and nothing else, making it the first time. Its name carries a hash of the migrations, so a
// changed or added migration gets a template of its own and two work trees with different schemas can
// test against one server at once. Test packages run in parallel processes: an advisory lock keyed by
// the same hash makes one of them build it while the others wait, and the template is built under a
// second name and renamed when complete, so a process killed half-way leaves nothing that looks ready.
func migratedTemplate(ctx context.Context, admin string) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "hookline_template_" + hex.EncodeToString(sum[:8])
	building := name + "_building"
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("testdb: template: %w", err)
	}
	defer conn.Close(context.Background())
	key := int64(binary.BigEndian.Uint64(sum[8:16]))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return "", fmt.Errorf("testdb: template lock: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", key) //nolint:errcheck // the session's end unlocks too
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("testdb: template: %w", err)
	}
	if exists {
		return name, nil
	}
	for _, statement := range []string{
		"DROP DATABASE IF EXISTS " + pgx.Identifier{building}.Sanitize() + " WITH (FORCE)",
		"CREATE DATABASE " + pgx.Identifier{building}.Sanitize(),
	} {
		if _, err := conn.Exec(ctx, statement); err != nil {
			return "", fmt.Errorf("testdb: template: %w", err)
		}
	}
	buildingURL, err := withDatabase(admin, building)
	if err != nil {
		return "", err
	}
	if err := migrateUp(ctx, buildingURL); err != nil {
		return "", fmt.Errorf("testdb: migrate template: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("testdb: template: %w", err)
	}
	return name, nil
}

// migrationsHash is a SHA-256 over the embedded migrations' names and contents, in file-name order.
func migrationsHash() ([32]byte, error) {
	h := sha256.New()
	err := fs.WalkDir(schema.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := fs.ReadFile(schema.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(content))
		h.Write(content)
		return nil
	})
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, err
}
