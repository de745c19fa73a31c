package publish_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/jackc/pgx/v5"
)

// A batch that fails is tried again publish by publish, but only for callers still waiting: one that has
// gone (and was told so) must not have its event stored behind its back, where a retry without an
// Idempotency-Key would store it twice.
func TestPublishRetriedAloneOnlyForCallersStillThere(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/hook", subscriptions.Input{})
	in := func(tenant uuid.UUID) publish.PublishInput {
		return publish.PublishInput{TenantID: tenant, EventType: "order.created", Payload: json.RawMessage(`{}`)}
	}
	gone, leave := context.WithCancel(e.ctx)
	leave()
	missing := uuid.Must(uuid.NewV7()) // no such tenant: the batch's statement fails
	got := e.pub.PublishTogetherFor([]context.Context{gone, e.ctx, e.ctx}, in(e.tenant), in(missing), in(e.tenant))
	if !errors.Is(got[0].Err, context.Canceled) || got[0].Stored {
		t.Errorf("the publish whose caller had gone: stored %v, err %v; want nothing stored and its caller's error", got[0].Stored, got[0].Err)
	}
	if got[1].Err == nil {
		t.Error("the publish for a tenant that does not exist was stored")
	}
	if got[2].Err != nil || !got[2].Stored {
		t.Errorf("the publish whose caller waits: stored %v, err %v", got[2].Stored, got[2].Err)
	}
	if n := e.count("SELECT count(*) FROM events WHERE id = $1", got[0].EventID); n != 0 {
		t.Error("the event of a caller that had gone was stored")
	}
	if n := e.count("SELECT count(*) FROM events"); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
}

// waitingPublishes counts the publish statements of the package's database that wait on a lock.
func (e *env) waitingPublishes() int {
	return e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
		AND wait_event_type = 'Lock' AND query LIKE '%name: PublishEvents %'`)
}

// runningPublishes counts the publish statements of the package's database still running.
func (e *env) runningPublishes() int {
	return e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
		AND state = 'active' AND query LIKE '%name: PublishEvents %' AND pid <> pg_backend_pid()`)
}

// lockTenant holds the tenant's row lock (FOR UPDATE) until the test ends or release is called: a publish
// of the tenant's waits (the event's and the deliveries' foreign key checks need a KEY SHARE lock on it).
func (e *env) lockTenant(id uuid.UUID) (release func()) {
	e.t.Helper()
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(e.ctx, "SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE", id); err != nil {
		e.t.Fatal(err)
	}
	return func() {
		if err := tx.Rollback(e.ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			e.t.Fatal(err)
		}
	}
}

type publishOutcome struct {
	out publish.Published
	err error
}

func (e *env) publishAsync(ctx context.Context, tenant uuid.UUID) chan publishOutcome {
	res := make(chan publishOutcome, 1)
	go func() {
		out, err := e.pub.Publish(ctx, publish.PublishInput{TenantID: tenant, EventType: "order.created", Payload: json.RawMessage(`{}`)})
		res <- publishOutcome{out, err}
	}()
	return res
}

func await(t *testing.T, res chan publishOutcome, what string) publishOutcome {
	t.Helper()
	select {
	case o := <-res:
		return o
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not return within 15 s", what)
		return publishOutcome{}
	}
}

// A publish whose caller goes while its statement runs (here it waits on a lock) is cancelled in
// PostgreSQL: the caller's error is the truth, and the statement does not commit once the lock is
// released. (Cut off by the client alone, the statement went on in the server and committed.)
func TestPublishWhoseCallerGoesMidStatementIsNotStored(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/hook", subscriptions.Input{})
	release := e.lockTenant(e.tenant)
	ctx, leave := context.WithCancel(e.ctx)
	res := e.publishAsync(ctx, e.tenant)
	eventually(t, 10*time.Second, "the publish to wait on the tenant's lock", func() bool { return e.waitingPublishes() == 1 })
	leave()
	o := await(t, res, "the publish whose caller left")
	if o.err == nil {
		t.Fatalf("the publish whose caller left answered %+v", o.out)
	}
	release()
	eventually(t, 10*time.Second, "the publish's statement to end", func() bool { return e.runningPublishes() == 0 })
	if n := e.count("SELECT count(*) FROM events"); n != 0 {
		t.Errorf("the publish answered %v, yet %d events were stored", o.err, n)
	}
}

// A caller that goes while a statement storing its publish with others runs gets that statement's
// outcome, not an error it would take for "not stored": whatever a publish answers is what was stored.
func TestPublishAnswerIsWhatItsBatchStored(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/first", subscriptions.Input{})
	other := setupOtherTenant(t, e)
	other.subscribe("http://127.0.0.1:1/second", subscriptions.Input{})

	// Both writers wait on the first tenant's row; two publishes of the other tenant queue
	// behind them and go together, as one batch, once the writers are free.
	releaseFirst := e.lockTenant(e.tenant)
	releaseSecond := e.lockTenant(other.tenant)
	busy1 := e.publishAsync(e.ctx, e.tenant) // one at a time, so that each writer takes one
	eventually(t, 10*time.Second, "the first writer to wait", func() bool { return e.waitingPublishes() == 1 })
	busy2 := e.publishAsync(e.ctx, e.tenant)
	eventually(t, 10*time.Second, "both writers to wait", func() bool { return e.waitingPublishes() == 2 })
	leavingCtx, leave := context.WithCancel(e.ctx)
	leaving, staying := e.publishAsync(leavingCtx, other.tenant), e.publishAsync(e.ctx, other.tenant)
	eventually(t, 10*time.Second, "two publishes to queue", func() bool { return e.pub.Waiting() == 2 })
	releaseFirst()
	for _, r := range []chan publishOutcome{busy1, busy2} {
		if o := await(t, r, "a publish of the first tenant"); o.err != nil {
			t.Fatal(o.err)
		}
	}
	eventually(t, 10*time.Second, "the batch to wait on the second tenant", func() bool { return e.waitingPublishes() == 1 })
	leave()
	releaseSecond()
	left := await(t, leaving, "the publish whose caller left")
	stayed := await(t, staying, "the publish whose caller stayed")
	if stayed.err != nil {
		t.Fatal(stayed.err)
	}
	eventually(t, 10*time.Second, "the batch's statement to end", func() bool { return e.runningPublishes() == 0 })
	n := other.count("SELECT count(*) FROM events WHERE tenant_id = $1", other.tenant)
	switch {
	case left.err != nil && n != 1:
		t.Errorf("the publish whose caller left answered %v, yet %d events of its batch were stored", left.err, n)
	case left.err == nil && n != 2:
		t.Errorf("the publish whose caller left answered %s, yet %d events of its batch were stored", left.out.ID, n)
	}
	if left.err != nil {
		t.Logf("the caller that left was answered %v", left.err)
	}
}
