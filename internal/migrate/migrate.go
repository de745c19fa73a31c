// Package migrate applies the embedded schema migrations with goose.
package migrate

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hookline/hookline/db/schema"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver goose needs
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Up applies every pending migration. It holds a PostgreSQL advisory lock while it works, so several
// instances starting at once migrate one after the other instead of racing.
func Up(ctx context.Context, databaseURL string) error {
	return UpTo(ctx, databaseURL, 0)
}

// UpTo applies the pending migrations up to and including version (0: all of them), as Up does. Tests
// make a database of an earlier release with it.
func UpTo(ctx context.Context, databaseURL string, version int64) error {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return fmt.Errorf("migrate: open: %w", err)
	}
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migrate: locker: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, schema.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if version == 0 {
		_, err = provider.Up(ctx)
	} else {
		_, err = provider.UpTo(ctx, version)
	}
	if err != nil {
		return fmt.Errorf("migrate: up: %w", err)
	}
	return nil
}
