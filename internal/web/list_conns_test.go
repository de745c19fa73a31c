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
func TestDeliveriesPageHoldsOneConnection(t *testing.T) {
	ctx := context.Background()
	private, drop, err := testdb.Create(ctx, "web_list_conns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop) // after the server's own cleanup, which runs first
	e := setup(t, func(c *config.Config) { c.DatabaseURL = private })
	tn := e.newTenant("list conns")
	sub := e.newSubscription(tn, "/good/conns", "conns")
	e.publishTo(tn, sub.ID, "order.paid", map[string]any{"n": 1})
	c := e.client()
	c.login(tn.Email)

	connect := func() *pgx.Conn {
		conn, err := pgx.Connect(ctx, private)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}
	watch := connect()
	count := func(sql string) int {
		var n int
		if err := watch.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Error(err)
		}
		return n
	}
	waiting := func(names ...string) int {
		n := 0
		for _, name := range names {
			n += count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
				AND wait_event_type = 'Lock' AND query LIKE '%name: ` + name + ` %'`)
		}
		return n
	}
	// lock takes the table on a new connection; queued reports its backend once it waits for the lock.
	lock := func(queued chan<- int) chan pgx.Tx {
		conn := connect()
		var pid int
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatal(err)
		}
		got := make(chan pgx.Tx, 1)
		go func() {
			tx, err := conn.Begin(ctx)
			if err == nil {
				_, err = tx.Exec(ctx, "LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE")
			}
			if err != nil {
				t.Error(err)
			}
			got <- tx
		}()
		if queued != nil {
			queued <- pid
		}
		return got
	}

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
