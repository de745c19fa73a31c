// Package maintenance runs Hookline's periodic work (lease rescue, session pruning, retention sweeps) on
// exactly one process among all those sharing the database.
//
// The design follows River's queue maintainer (riverqueue/river internal/maintenance): a leader is
// elected, and only the leader runs the maintenance services, each on its own interval. Here the election
// is a PostgreSQL session advisory lock (pg_try_advisory_lock) held on a dedicated connection, like the
// worker's LISTEN connection: the lock lives exactly as long as that session, so a leader that crashes,
// or whose connection dies, gives leadership up without any table or TTL bookkeeping.
//
// Leadership can briefly overlap: a leader whose session the server has already ended notices at its next
// check (every ElectInterval) while another process may already hold the lock. Every task must therefore
// be safe to run twice at once: the rescue and the session prune are single guarded statements, and the
// retention sweep takes its own advisory lock.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/sleep"
	"github.com/jackc/pgx/v5"
)

// LeaderLockKey is the advisory lock key of the maintenance leader. Advisory keys are one namespace per
// database, shared with goose's migration lock and the retention sweep's lock, so each has its own value.
const LeaderLockKey int64 = 0x686f6f6b_6c656164 // "hooklead"

// Task is one periodic maintenance service.
type Task struct {
	// Name labels the task's log lines.
	Name string
	// Interval is the pause between the end of one run and the start of the next. A task first runs as
	// soon as its process becomes leader, so work left by a dead leader is picked up at once.
	Interval time.Duration
	// Run does one round of work. Its context is cancelled when leadership is lost, on Stop, or when the
	// run has taken Timeout.
	Run func(ctx context.Context) error
	// Timeout bounds one run (default the larger of Interval and DefaultTimeout): a run stuck on a
	// database that stopped answering, or on a mail server, ends, and the task runs again at its next turn.
	// Every task resumes where a cut-off run stopped: their work is committed in batches or claimed in SQL.
	Timeout time.Duration
}

// DefaultTimeout is the least default Task.Timeout.
const DefaultTimeout = time.Minute

func (t Task) timeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return max(t.Interval, DefaultTimeout)
}

// Options tune a Maintainer. Zero values take the defaults noted.
type Options struct {
	// ConnConfig is the database the processes share (required); the Maintainer opens its own connection.
	ConnConfig *pgx.ConnConfig
	// LockKey is the advisory lock key to elect on (default LeaderLockKey).
	LockKey int64
	// ElectInterval is how often a follower tries to take the lock and a leader checks that it still holds
	// it (default 5 s). The contract's rescue deadline counts on it being at most 5 s.
	ElectInterval time.Duration
	// Logger receives task errors and leadership changes (default slog.Default()).
	Logger *slog.Logger
}

// Maintainer elects a leader among the processes sharing a database and, while this process leads, runs
// the registered tasks.
type Maintainer struct {
	o      Options
	log    *slog.Logger
	tasks  []Task
	leader atomic.Bool

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// New returns a Maintainer; Register tasks, then Start it.
func New(o Options) *Maintainer {
	if o.LockKey == 0 {
		o.LockKey = LeaderLockKey
	}
	if o.ElectInterval <= 0 {
		o.ElectInterval = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Maintainer{o: o, log: o.Logger}
}

// Register adds a task. It must be called before Start.
func (m *Maintainer) Register(t Task) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		panic("maintenance: Register after Start")
	}
	if t.Interval <= 0 || t.Run == nil {
		panic(fmt.Sprintf("maintenance: task %q needs an interval and a run func", t.Name))
	}
	m.tasks = append(m.tasks, t)
}

// IsLeader says whether this process leads (and so runs the tasks) right now.
func (m *Maintainer) IsLeader() bool { return m.leader.Load() }

// Start begins electing in the background. ctx only bounds start-up: Stop ends the Maintainer.
func (m *Maintainer) Start(ctx context.Context) error {
	if m.o.ConnConfig == nil {
		return errors.New("maintenance: no ConnConfig")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errors.New("maintenance: already started")
	}
	m.started = true
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel, m.done = cancel, make(chan struct{})
	go func() {
		defer close(m.done)
		m.elect(runCtx)
	}()
	return nil
}

// Stop cancels the running tasks, waits for them, gives leadership up (another process takes over
// within its ElectInterval) and returns; or returns ctx's error when ctx ends first (a task stuck on a
// database that stopped answering: its connection is cut when the process exits, and the advisory lock
// goes with it). Safe to call more than once, or without Start.
func (m *Maintainer) Stop(ctx context.Context) error {
	m.mu.Lock()
	cancel, done := m.cancel, m.done
	m.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("maintenance: %w", ctx.Err())
	}
}

// elect keeps one connection open and tries the lock on it every ElectInterval; holding it, it leads
// until the lock or the connection is lost, then goes back to trying. A broken connection is reopened.
func (m *Maintainer) elect(ctx context.Context) {
	for ctx.Err() == nil {
		err := m.session(ctx)
		if ctx.Err() != nil {
			return
		}
		m.log.Warn("maintenance: leader election connection failed; retrying", "err", err)
		sleep.For(ctx, m.o.ElectInterval)
	}
}

// session runs elections on one connection until it fails or ctx ends.
func (m *Maintainer) session(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, m.o.ConnConfig.Copy())
	if err != nil {
		return err
	}
	// Closing the session releases the lock, so no explicit unlock is needed on any path out of here.
	defer conn.Close(context.Background())
	q := db.New(conn)
	// The server ends this session when it hears nothing for three checks, so a leader whose host froze or
	// vanished without closing its socket frees the lock in seconds rather than after TCP's keepalive
	// (hours by default). Older servers lack the setting; the election works without it.
	if err := q.SetIdleSessionTimeout(ctx, fmt.Sprint((3 * m.o.ElectInterval).Milliseconds())); err != nil {
		if ctx.Err() != nil || conn.IsClosed() {
			return err
		}
		m.log.Info("maintenance: idle_session_timeout unavailable; a vanished leader is noticed by TCP keepalive", "err", err)
	}
	for {
		got, err := m.check(ctx, q.TryAdvisoryLock)
		if err != nil {
			return err
		}
		if got {
			if err := m.lead(ctx, q); err != nil {
				return err
			}
			return nil // ctx ended
		}
		if !sleep.For(ctx, m.o.ElectInterval) {
			return nil
		}
	}
}

// check runs one lock query, bounded by the election interval so a hung connection counts as lost.
func (m *Maintainer) check(ctx context.Context, f func(context.Context, int64) (bool, error)) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, m.o.ElectInterval)
	defer cancel()
	return f(cctx, m.o.LockKey)
}

// lead runs the tasks while the lock is held, checking it every ElectInterval. It returns nil when ctx
// ends and an error when leadership was lost; either way the tasks have stopped when it returns.
func (m *Maintainer) lead(ctx context.Context, q *db.Queries) error {
	m.log.Info("maintenance: this process is now the leader", "tasks", len(m.tasks))
	m.leader.Store(true)
	taskCtx, stopTasks := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, t := range m.tasks {
		wg.Go(func() { m.run(taskCtx, t) })
	}
	defer func() {
		stopTasks()
		wg.Wait()
		m.leader.Store(false)
	}()
	for {
		if !sleep.For(ctx, m.o.ElectInterval) {
			return nil
		}
		held, err := m.check(ctx, q.HoldsAdvisoryLock)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil && !held {
			err = errors.New("advisory lock no longer held")
		}
		if err != nil {
			m.log.Warn("maintenance: leadership lost; stopping tasks", "err", err)
			return fmt.Errorf("leadership lost: %w", err)
		}
	}
}

// run calls one task now and then every Interval until ctx ends. Errors and panics are logged and the
// task runs again at its next turn: one bad round must not stop maintenance for good.
func (m *Maintainer) run(ctx context.Context, t Task) {
	for ctx.Err() == nil {
		start := time.Now()
		err := m.runOnce(ctx, t)
		if err != nil && ctx.Err() == nil {
			m.log.Error("maintenance task failed", "task", t.Name, "err", err, "duration", time.Since(start))
		}
		if !sleep.For(ctx, t.Interval) {
			return
		}
	}
}

func (m *Maintainer) runOnce(ctx context.Context, t Task) (err error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return t.Run(ctx)
}
