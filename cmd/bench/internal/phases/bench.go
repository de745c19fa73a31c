// Package phases are the benchmark harness's phases (docs/benchmarks.md describes each): every one
// starts what it measures on the testbed (a fresh database, the server binary, the loopback receiver),
// drives it, and adds its figures to the run's report.
package phases

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/testdb"
)

// All are the phases in the order they run; pages-10m only with -pages-10m.
var All = []string{"ingest", "drain", "ceiling", "goals", "latency", "idle", "aged", "retry", "pages", "history", "retention", "rss", "scaling", "ratelimit", "catalogue", "tracing", "filters", "ordered"}

// Options are the sizes, durations and rates of the phases (main's flags; `bench -h` says what each is).
type Options struct {
	Server         testbed.ServerBinary
	DrainN         int
	DrainSlowN     int
	DrainVars      string
	DrainCap       int
	SlowDelay      time.Duration
	CeilWorkers    int
	CeilBatch      int
	CeilHTTP       bool
	IngestN        int
	IngestDur      time.Duration
	Publishers     int
	Payload        int
	LatencyDur     time.Duration
	LatencyRate    float64
	IdleN          int
	IdleGap        time.Duration
	AgedN          int
	AgedAutovacuum string
	AgedDiagnose   bool
	RetryRate      float64
	RetryDead      int
	PagesN         int
	Pages10m       bool
	PagesBigN      int
	PageCalls      int
	RSSSmall       int
	RSSLarge       int
	ScaleProcs     string
	ScaleN         int
	SlowPlan       time.Duration
	DrainSlowPlan  time.Duration
	LimitRate      float64
	LimitBurst     int
	LimitQuiet     float64
	LimitDur       time.Duration
	LimitIgnore    bool
	Timeout        time.Duration
	GoalRounds     int
	History        HistoryOptions
}

// Bench is one run: its options, the report its phases add to, and the receiver every phase delivers to.
type Bench struct {
	o   Options
	res *report.Results
	rc  *testbed.Receiver
	// lastDrainCPU, when set, is where drainOnce leaves the CPU readings taken around its drain (the
	// tracing phase compares them).
	lastDrainCPU *[2]testbed.CPUUse
}

// New describes the machine in the report and starts the receiver; Close stops it.
func New(ctx context.Context, o Options) (*Bench, error) {
	b := &Bench{o: o, res: &report.Results{StartedAt: time.Now().UTC().Format(time.RFC3339), Args: os.Args[1:]}}
	m := &b.res.Machine
	m.Cores = runtime.NumCPU()
	m.Go = runtime.Version()
	m.MemoryMiB = memTotalMiB()
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
			m.Commit += "+dirty"
		}
	}
	if out, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	admin, err := testdb.AdminURL(ctx)
	if err != nil {
		return nil, err
	}
	pool, err := pgxuuid.NewPool(ctx, admin)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&m.PostgreSQL); err != nil {
		return nil, fmt.Errorf("PostgreSQL at DATABASE_URL or the project-managed one: %w", err)
	}
	if b.rc, err = testbed.StartReceiver(); err != nil {
		return nil, err
	}
	return b, nil
}

// Close stops the receiver.
func (b *Bench) Close() { b.rc.Close() }

// Results is the run's report, which the phases add to.
func (b *Bench) Results() *report.Results { return b.res }

// Run runs one phase (a name of All).
func (b *Bench) Run(ctx context.Context, phase string) error {
	phases := map[string]func(context.Context) error{
		"ingest": b.ingest, "drain": b.drain, "ceiling": b.ceiling, "goals": b.goals, "latency": b.latency, "idle": b.idle, "aged": b.aged,
		"retry": b.retry, "pages": b.pages, "rss": b.rss, "scaling": b.scaling, "ratelimit": b.ratelimit,
		"catalogue": b.catalogue, "tracing": b.tracing, "history": b.history, "retention": b.retention,
		"filters": b.filters, "ordered": b.ordered,
	}
	run, ok := phases[phase]
	if !ok {
		return fmt.Errorf("no phase %q", phase)
	}
	return run(ctx)
}

func memTotalMiB() int {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb / 1024
		}
	}
	return 0
}

// serverPhase gives a phase its own fresh database, a server on it and a client of the server, and the
// cleanup that stops the server and drops the database.
func (b *Bench) serverPhase(ctx context.Context, phase string, env ...string) (*testbed.Database, *testbed.Server, *testbed.Client, func(), error) {
	db, err := b.o.Server.FreshDB(ctx, phase)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	s, err := b.o.Server.Start(ctx, db.URL, env...)
	if err != nil {
		db.Close()
		return nil, nil, nil, nil, err
	}
	return db, s, testbed.NewClient(s.Base), func() { s.Stop(); db.Close() }, nil
}

// recordPeak adds the server's peak RSS since the last ResetPeak as a figure.
func (b *Bench) recordPeak(phase, what string, s *testbed.Server) {
	if _, hwm, err := s.Memory(); err == nil {
		b.res.Add("rss", "peak during "+phase+" "+what, hwm, "MiB", "VmHWM")
	}
}

// record adds a tally's lost and duplicates as figures of phase/name.
func (b *Bench) record(phase, name string, t testbed.Tally) {
	b.res.Add(phase, name+" lost", float64(t.Lost()), "lost", fmt.Sprintf("of %d", t.Expected))
	b.res.Add(phase, name+" duplicates", float64(t.Duplicates()), "duplicates", "")
}

// addCPU records a phase's CPU per delivery in the results.
func (b *Bench) addCPU(phase, what string, before, after testbed.CPUUse, n int) {
	s, d, h, ok := before.PerDelivery(after, n)
	if !ok {
		return
	}
	b.res.Add(phase, what+" CPU per delivery: database", d, "µs", "PostgreSQL backends of the phase's database")
	if s > 0 {
		b.res.Add(phase, what+" CPU per delivery: server", s, "µs", "")
	}
	b.res.Add(phase, what+" CPU per delivery: harness", h, "µs", "receiver (and, in the ceiling, the SQL client)")
	fmt.Printf("%s %s: CPU per delivery: database %.0f µs, server %.0f µs, harness %.0f µs\n", phase, what, d, s, h)
}
