package maintenance_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/maintenance"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "maintenance", func(u string) { dbURL = u }) }

// electEvery keeps the tests quick; production elects every 5 s.
const electEvery = 50 * time.Millisecond

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func connConfig(t testing.TB) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	p, err := pgxuuid.NewPool(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// counter is a task that counts its runs and whether its context was ever cancelled mid-run.
type counter struct {
	runs      atomic.Int64
	cancelled atomic.Int64
	// block makes each run wait for cancellation, to observe that losing leadership cancels tasks.
	block bool
}

func (c *counter) task(name string) maintenance.Task {
	return maintenance.Task{Name: name, Interval: 5 * time.Millisecond, Run: func(ctx context.Context) error {
		c.runs.Add(1)
		if c.block {
			<-ctx.Done()
			c.cancelled.Add(1)
		}
		return nil
	}}
}

func newMaintainer(t *testing.T, key int64, tasks ...maintenance.Task) *maintenance.Maintainer {
	t.Helper()
	m := maintenance.New(maintenance.Options{ConnConfig: connConfig(t), LockKey: key, ElectInterval: electEvery, Logger: quietLog})
	for _, task := range tasks {
		m.Register(task)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(context.Background()) })
	return m
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// Two processes on one database: exactly one leads and runs tasks; stopping it hands leadership to the
// other, whose tasks then run, and the stopped one's do not.
func TestOneLeaderAndHandover(t *testing.T) {
	t.Parallel()
	const key = 101
	var a, b counter
	ma := newMaintainer(t, key, a.task("a"))
	mb := newMaintainer(t, key, b.task("b"))

	eventually(t, "a leader", func() bool { return ma.IsLeader() || mb.IsLeader() })
	leader, follower, lc, fc := ma, mb, &a, &b
	if mb.IsLeader() {
		leader, follower, lc, fc = mb, ma, &b, &a
	}
	// Run long enough for the follower to try the lock several times (20 runs ≥ 100 ms ≥ 2 elections).
	eventually(t, "the leader's task to run 20 times", func() bool { return lc.runs.Load() >= 20 })
	if follower.IsLeader() || fc.runs.Load() != 0 {
		t.Fatalf("both lead: follower leader=%v, its task ran %d times", follower.IsLeader(), fc.runs.Load())
	}

	leader.Stop(context.Background())
	if leader.IsLeader() {
		t.Fatal("a stopped maintainer still says it leads")
	}
	stoppedAt := lc.runs.Load()
	eventually(t, "the follower to take over", func() bool { return follower.IsLeader() && fc.runs.Load() >= 5 })
	if n := lc.runs.Load(); n != stoppedAt {
		t.Fatalf("the stopped leader's task ran %d more times", n-stoppedAt)
	}
}

// A leader whose connection dies (here the server ends it) loses leadership: its running tasks are
// cancelled, and leadership is taken again (by whoever gets the lock first) on a fresh connection.
func TestLostConnectionCancelsTasks(t *testing.T) {
	t.Parallel()
	const key = 102
	c := counter{block: true}
	m := newMaintainer(t, key, c.task("blocking"))
	eventually(t, "leadership", func() bool { return m.IsLeader() && c.runs.Load() == 1 })

	p := pool(t)
	// A bigint advisory key is classid = high 32 bits, objid = low 32 bits.
	var killed bool
	if err := p.QueryRow(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid = 0 AND objid = $1`, key).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the leader's session: %v, %v", killed, err)
	}
	eventually(t, "the running task to be cancelled", func() bool { return c.cancelled.Load() == 1 })
	eventually(t, "leadership regained on a new connection", func() bool { return m.IsLeader() && c.runs.Load() == 2 })
}

// A failing or panicking task is logged and runs again at its next turn; other tasks are unaffected.
func TestTaskErrorsAreLoggedAndRetried(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var fails, panics, ok atomic.Int64
	m := maintenance.New(maintenance.Options{ConnConfig: connConfig(t), LockKey: 103, ElectInterval: electEvery, Logger: log})
	m.Register(maintenance.Task{Name: "fails", Interval: time.Millisecond, Run: func(context.Context) error {
		fails.Add(1)
		return errors.New("boom")
	}})
	m.Register(maintenance.Task{Name: "panics", Interval: time.Millisecond, Run: func(context.Context) error {
		panics.Add(1)
		panic("kaput")
	}})
	m.Register(maintenance.Task{Name: "ok", Interval: time.Millisecond, Run: func(context.Context) error { ok.Add(1); return nil }})
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every task to run three times", func() bool { return fails.Load() >= 3 && panics.Load() >= 3 && ok.Load() >= 3 })
	m.Stop(context.Background())
	out := logs.String()
	for _, want := range []string{"task=fails", "err=boom", "task=panics", "kaput"} {
		if !bytes.Contains([]byte(out), []byte(want)) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// A run that takes longer than its Timeout (here one stuck until its context ends, as on a database that
// stopped answering) is cut off, logged, and the task runs again at its next turn.
func TestRunEndsAtItsTimeout(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	var runs, cut atomic.Int64
	m := maintenance.New(maintenance.Options{ConnConfig: connConfig(t), LockKey: 105, ElectInterval: electEvery,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	m.Register(maintenance.Task{Name: "stuck", Interval: time.Millisecond, Timeout: 20 * time.Millisecond, Run: func(ctx context.Context) error {
		runs.Add(1)
		<-ctx.Done()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cut.Add(1)
		}
		return ctx.Err()
	}})
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(context.Background()) })
	eventually(t, "two runs cut off at their timeout", func() bool { return cut.Load() >= 2 && runs.Load() >= 3 })
	if out := logs.String(); !bytes.Contains([]byte(out), []byte("task=stuck")) || !bytes.Contains([]byte(out), []byte("deadline exceeded")) {
		t.Errorf("the cut-off run is not logged:\n%s", out)
	}
}

// Stop ends the election loop, the tasks and the connection: nothing is left running, whether the
// maintainer led or followed.
func TestStopLeavesNoGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	const key = 104
	var a, b counter
	start := func(c *counter) *maintenance.Maintainer {
		m := maintenance.New(maintenance.Options{ConnConfig: connConfig(t), LockKey: key, ElectInterval: electEvery, Logger: quietLog})
		m.Register(c.task("t"))
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		return m
	}
	ma, mb := start(&a), start(&b)
	eventually(t, "a leader running its task", func() bool { return a.runs.Load()+b.runs.Load() > 3 })
	// The follower mid-election too: the leader's task has run over two election intervals since.
	ran := a.runs.Load() + b.runs.Load()
	eventually(t, "two election intervals", func() bool { return a.runs.Load()+b.runs.Load() >= ran+2*int64(electEvery/(5*time.Millisecond)) })
	ma.Stop(context.Background())
	mb.Stop(context.Background())
	mb.Stop(context.Background()) // twice is fine
	goleak.VerifyNone(t, before)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
