package web_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/testdb"
	"golang.org/x/net/html"
)

// historyEnv is a server on a database of its own (the history card reads the whole database's history),
// on a clock the test moves.
func historyEnv(t *testing.T) (*env, *fakeClock) {
	t.Helper()
	ownDB, drop, err := testdb.Create(context.Background(), "web_history")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop) // after the server stops (cleanups run last first)
	clock := &fakeClock{now: time.Now()}
	e := setupWith(t, httpOnly, func(cfg *config.Config) {
		withAdmin(cfg)
		cfg.DatabaseURL = ownDB
	}, server.Options{Now: clock.Now})
	return e, clock
}

// storeDelivery writes a finished delivery (delivered or failed) made at made whose last attempt, and death
// when failed, was at last (SQL: the API makes deliveries of now only).
func (e *env) storeDelivery(state string, made, last time.Time) {
	e.t.Helper()
	tn := e.newTenant("history-" + made.Format("20060102"))
	sub := e.newSubscription(tn, "/history", "history")
	id := uuid.New()
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(made.UnixMilli()))
	copy(id[:6], ms[2:])
	id[6] = 0x70 | id[6]&0x0f // a UUIDv7 of made
	if _, err := e.srv.Pool.Exec(setupCtx(), `INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type,
		state, give_up_at, created_at, last_attempt_at, dead_at) VALUES ($1, $2, $1, $3, 'a.b', $4::text, $5::timestamptz, $5, $6::timestamptz, CASE WHEN $4 = 'failed' THEN $6::timestamptz END)`,
		id, tn.ID, sub.ID, state, made, last); err != nil {
		e.t.Fatal(err)
	}
}

// /admin's History card: each table's partitions (count, the legacy one as "before" the cut-over, made
// until, size), the partitions made ahead and whether retention keeps up: it does with a delivery made 100
// days ago and resent yesterday (its retention runs from its last attempt). Two days later with a dead
// delivery past its retention, the partitions ahead are short (the leader did not run) and retention is
// behind.
func TestAdminHistoryCard(t *testing.T) {
	t.Parallel()
	e, clock := historyEnv(t)
	day := 24 * time.Hour
	e.storeDelivery("delivered", clock.Now().Add(-100*day), clock.Now().Add(-day))
	parts, err := e.srv.History.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	madeUntil := history.MadeUntil(parts)
	c := e.client()
	c.login(adminEmail)
	card := one(t, c.get("/admin").Doc, "history-card")
	rows := byTestID(card, "history-table")
	if len(rows) != len(history.Tables) {
		t.Fatalf("%d tables, want %d: %q", len(rows), len(history.Tables), text(card))
	}
	for i, row := range rows {
		table := history.Tables[i]
		var n int
		var cutover time.Time
		for _, p := range parts {
			if p.Table == table {
				n++
				if p.Legacy {
					cutover = p.EndsAt
				}
			}
		}
		if got := attr(row, "data-table"); got != table {
			t.Errorf("row %d is %q, want %s", i, got, table)
		}
		if got := text(one(t, row, "partitions")); got != fmt.Sprint(n) {
			t.Errorf("%s: %s partitions, want %d", table, got, n)
		}
		if got, want := shownText(one(t, row, "oldest")), "before "+minute(cutover); got != want {
			t.Errorf("%s: oldest %q, want %q", table, got, want)
		}
		if got := text(one(t, row, "made-until")); got != minute(madeUntil) {
			t.Errorf("%s: made until %q, want %q", table, got, minute(madeUntil))
		}
		if got := text(one(t, row, "size")); !strings.HasSuffix(got, " KiB") && !strings.HasSuffix(got, " MiB") {
			t.Errorf("%s: size %q, want KiB or MiB", table, got)
		}
	}
	ahead := one(t, card, "history-ahead")
	intervals := float64(madeUntil.Sub(clock.Now())) / float64(24*time.Hour) // at least 3
	if got, want := shownText(ahead), fmt.Sprintf("made until %s (%.1f intervals ahead)", minute(madeUntil), floorTenth(intervals)); got != want {
		t.Errorf("ahead %q, want %q", got, want)
	}
	if hasAttr(ahead, "data-short") || strings.Contains(attr(ahead, "class"), "rate-") || len(byTestID(ahead, "history-ahead-hint")) > 0 {
		t.Errorf("%.1f intervals ahead shown as short", intervals)
	}
	retention := one(t, card, "history-retention")
	if got, want := text(retention), "keeping up The oldest finished delivery kept was made 100 days ago. Delivered deliveries are kept "+
		"30 days after their last attempt, dead ones 90 days after they died, each up to one partition (24 hours) longer."; got != want {
		t.Errorf("retention %q, want %q", got, want)
	}

	// Two days on (the leader, not running here, made nothing), with a dead delivery made 100 days ago.
	clock.Add(48 * time.Hour)
	e.storeDelivery("failed", clock.Now().Add(-103*day), clock.Now().Add(-100*day))
	card = one(t, c.get("/admin").Doc, "history-card")
	ahead = one(t, card, "history-ahead")
	if !hasAttr(ahead, "data-short") || attr(ahead, "class") != "rate-warn" {
		t.Errorf("%q: not shown as short (class %q)", text(ahead), attr(ahead, "class"))
	}
	if got, want := shownText(ahead), fmt.Sprintf("(%.1f intervals ahead) The maintenance leader makes them every 10 minutes", floorTenth(intervals-2)); !strings.Contains(got, want) {
		t.Errorf("ahead %q, want it to say %q", got, want)
	}
	retention = one(t, card, "history-retention")
	if !hasAttr(retention, "data-behind") {
		t.Errorf("retention not shown as behind: %q", text(retention))
	}
	if got, want := text(retention), "behind by 10 days A dead delivery is kept 10 days past HOOKLINE_RETENTION_DEAD. "+
		"The oldest finished delivery kept was made 103 days ago."; !strings.HasPrefix(got, want) {
		t.Errorf("retention %q, want it to start %q", got, want)
	}
}

// shownText is an element's text as a browser shows it: its text nodes as they are (text puts a space
// between them), whitespace collapsed.
func shownText(n *html.Node) string { return strings.Join(strings.Fields(visibleText(n)), " ") }

// minute writes t as the card does.
func minute(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

func floorTenth(f float64) float64 { return float64(int(f*10)) / 10 }

// The History card with its warnings (partitions short, retention behind) at laptop and phone widths:
// nothing overflows sideways.
func TestBrowserAdminHistoryCard(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e, clock := historyEnv(t)
	clock.Add(48 * time.Hour)
	e.storeDelivery("failed", clock.Now().Add(-103*24*time.Hour), clock.Now().Add(-100*24*time.Hour))
	b.login(e.base, adminEmail)
	for _, v := range laptopAndPhone {
		b.emulate(v)
		b.open(e.base, "/admin", "admin-history-"+v.name, v) // nothing wider than the screen
		if !eval[bool](b, `!!document.querySelector('[data-testid=history-ahead][data-short]') && !!document.querySelector('[data-testid=history-retention][data-behind]')`) {
			t.Errorf("at %s the card does not warn: %s", v.name, b.text(`[data-testid=history-card]`))
		}
	}
}
