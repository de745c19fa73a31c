package web_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
)

// A list page runs its page and its state tabs' counts one after another in one transaction (one snapshot),
// not all six at once: each statement in flight holds a connection of the pool the whole dashboard and API
// share (one page took 7 of 16). The test holds the deliveries table
// locked so that the list's statements pile up in PostgreSQL, on a database of its own (nothing else lists
// deliveries there), and counts the most of them waiting at once.
// lockingDB is a test's own database seen from outside the server: it counts what waits for a lock on it
// (on its watch connection) and takes the deliveries table's lock.
type lockingDB struct {
	t     *testing.T
	ctx   context.Context
	url   string
	watch *pgx.Conn
}

// connect opens a connection of the test's, closed when the test ends.
func (db *lockingDB) connect() *pgx.Conn {
	conn, err := pgx.Connect(db.ctx, db.url)
	if err != nil {
		db.t.Fatal(err)
	}
	db.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func (db *lockingDB) count(sql string) int {
	var n int
	if err := db.watch.QueryRow(db.ctx, sql).Scan(&n); err != nil {
		db.t.Error(err)
	}
	return n
}

// waiting is how many of the named statements wait for a lock.
func (db *lockingDB) waiting(names ...string) int {
	n := 0
	for _, name := range names {
		n += db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%name: ` + name + ` %'`)
	}
	return n
}

// lock takes the table on a new connection; queued reports its backend once it waits for the lock.
func (db *lockingDB) lock(queued chan<- int) chan pgx.Tx {
	conn := db.connect()
	var pid int
	if err := conn.QueryRow(db.ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		db.t.Fatal(err)
	}
	got := make(chan pgx.Tx, 1)
	go func() {
		tx, err := conn.Begin(db.ctx)
		if err == nil {
			_, err = tx.Exec(db.ctx, "LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE")
		}
		if err != nil {
			db.t.Error(err)
		}
		got <- tx
	}()
	if queued != nil {
		queued <- pid
	}
	return got
}

func TestDeliveriesPageHoldsOneConnection(t *testing.T) {
	ctx := context.Background()
	private, drop, err := testdb.Create(ctx, "web_list_conns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop) // after the server's own cleanup, which runs first
	e := setup(t, httpOnly, func(c *config.Config) { c.DatabaseURL = private })
	tn := e.newTenant("list conns")
	sub := e.newSubscription(tn, "/good/conns", "conns")
	e.publishTo(tn, sub.ID, "order.paid", map[string]any{"n": 1})
	c := e.client()
	c.login(tn.Email)

	db := &lockingDB{t: t, ctx: ctx, url: private}
	db.watch = db.connect()
	count, waiting, lock := db.count, db.waiting, db.lock

	held := <-lock(nil)
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, e.base+"/deliveries", nil)
		res, err := c.http.Do(req)
		if err != nil {
			done <- 0
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		done <- res.StatusCode
	}()
	// The page first reads its event types from the table (pgx describes the statement, then runs it: two
	// waits), then fans out. Each time the event types wait, a lock queued behind them takes over once they
	// have gone through (PostgreSQL grants locks in the order asked), so the fan-out waits behind it.
	for {
		var statements, types int
		pollUntil(t, 10*time.Second, "the page to wait on the table", func() bool {
			statements, types = waiting("ListDeliveries", "CountDeliveries"), waiting("RecentEventTypes")
			return statements > 0 || types > 0
		})
		if statements > 0 {
			break
		}
		queued := make(chan int, 1)
		next := lock(queued)
		pid := <-queued
		pollUntil(t, 10*time.Second, "the next lock to queue", func() bool {
			return count(`SELECT count(*) FROM pg_stat_activity WHERE pid = `+strconv.Itoa(pid)+` AND wait_event_type = 'Lock'`) == 1
		})
		if err := held.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		held = <-next
	}
	most := 0
	pollUntil(t, 10*time.Second, "the page's statements to wait", func() bool {
		most = max(most, waiting("ListDeliveries", "CountDeliveries"))
		return most >= 1
	})
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		most = max(most, waiting("ListDeliveries", "CountDeliveries"))
		select {
		case status := <-done:
			if status != http.StatusOK {
				t.Fatalf("the page answered %d", status)
			}
			if most > 1 {
				t.Errorf("%d of the page's statements waited at once, each holding a connection; want one", most)
			}
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}
