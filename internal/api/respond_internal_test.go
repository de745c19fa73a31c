package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
)

// An API client is told the database is unavailable only when it is: a statement that ran out of time (its
// deadline, statement_timeout) says the database did not answer in time, a connection that could not be
// made says unavailable. Both are the contract's INTERNAL; the errors are real PostgreSQL ones.
func TestDatabaseErrorsSayWhatHappened(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	admin, err := testdb.AdminURL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := func() error {
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := conn.Exec(dctx, "SELECT pg_sleep(5)")
		return err
	}()
	conn, err = pgx.Connect(ctx, admin) // the deadline closed the first
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET statement_timeout = 50"); err != nil {
		t.Fatal(err)
	}
	_, statementTimeout := conn.Exec(ctx, "SELECT pg_sleep(5)")
	nobody, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody.Close()
	u, _ := url.Parse(admin)
	u.Host = nobody.Addr().String()
	_, refused := pgx.Connect(ctx, u.String())

	for _, c := range []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"a statement past its deadline", deadline, false},
		{"statement_timeout", statementTimeout, false},
		{"no database server to connect to", refused, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil {
				t.Fatal("no error")
			}
			rec := httptest.NewRecorder()
			writeError(rec, httptest.NewRequest(http.MethodGet, "/api/v1/tenants", nil), c.err)
			var body errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if rec.Code != http.StatusInternalServerError || body.Error.Code != "INTERNAL" {
				t.Errorf("%d %s, want 500 INTERNAL", rec.Code, body.Error.Code)
			}
			said := strings.Contains(body.Error.Message, "unavailable")
			if said != c.unavailable {
				t.Errorf("for %v the client is told %q", c.err, body.Error.Message)
			}
			if !c.unavailable && !strings.Contains(body.Error.Message, "did not answer in time") {
				t.Errorf("for %v the client is told %q, want that the database did not answer in time", c.err, body.Error.Message)
			}
		})
	}
}
