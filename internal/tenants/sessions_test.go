package tenants

import (
	"testing"
	"time"

	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/jackc/pgx/v5"
)

// Service.PruneSessions deletes expired sessions and keeps live ones.
func TestPruneSessions(t *testing.T) {
	// Parallel: it reads the whole sessions table, which no other test of the package writes.
	t.Parallel()
	p, err := pgxuuid.NewPool(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	now := time.Now().UTC().Truncate(time.Microsecond)
	if _, err := p.Exec(t.Context(), `INSERT INTO sessions (token, data, expiry) VALUES
		('old', '', $1), ('live', '', $2)`, now.Add(-time.Second), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	svc := NewService(p, "")
	svc.Now = func() time.Time { return now }
	if _, err := svc.PruneSessions(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, _ := p.Query(t.Context(), "SELECT token FROM sessions ORDER BY token")
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(left) != 1 || left[0] != "live" {
		t.Fatalf("sessions left: %v, %v", left, err)
	}
}
