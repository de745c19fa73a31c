// Command bench is Hookline's benchmark harness (`make bench`): it runs the real server binary as a
// subprocess against a fresh PostgreSQL database, drives it only through the JSON API, counts what a
// loopback receiver gets, and compares the drain with the same row work done directly in SQL (the
// ceiling). It prints a line per measurement, a table at the end, and writes bench/results.json.
// docs/benchmarks.md describes every phase. Figures are only comparable within one run.
package main

import (
	"context"
	"debug/buildinfo"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hookline/hookline/internal/pgdev"
)

// allPhases in the order they run; pages-10m only with -pages-10m.
var allPhases = []string{"ingest", "drain", "ceiling", "goals", "latency", "idle", "retry", "pages", "rss", "scaling", "ratelimit", "catalogue", "tracing"}

type options struct {
	only          map[string]bool
	out           string
	serverBin     string
	noBuild       bool
	verbose       bool
	serverEnv     []string
	drainN        int
	drainSlowN    int
	drainVars     string
	drainCap      int
	slowDelay     time.Duration
	ceilWorkers   int
	ceilBatch     int
	ceilHTTP      bool
	ingestN       int
	ingestDur     time.Duration
	publishers    int
	payload       int
	latencyDur    time.Duration
	latencyRate   float64
	idleN         int
	idleGap       time.Duration
	retryRate     float64
	retryDead     int
	pagesN        int
	pages10m      bool
	pagesBigN     int
	pageCalls     int
	rssSmall      int
	rssLarge      int
	scaleProcs    string
	scaleN        int
	slowPlan      time.Duration
	drainSlowPlan time.Duration
	limitRate     float64
	limitBurst    int
	limitQuiet    float64
	limitDur      time.Duration
	limitIgnore   bool
	timeout       time.Duration
	goalRounds    int
}

func main() {
	var o options
	var only, env string
	flag.StringVar(&only, "only", "", "comma-separated phases to run ("+strings.Join(allPhases, ",")+"); empty: all")
	flag.StringVar(&o.out, "out", "bench/results.json", "where to write the results (empty: nowhere)")
	flag.StringVar(&o.serverBin, "server", "bin/server", "server binary (built from ./cmd/server unless -no-build)")
	flag.BoolVar(&o.noBuild, "no-build", false, "use -server as it is (it must match the source: the harness migrates each database with the migrations it was built with)")
	flag.BoolVar(&o.verbose, "v", false, "show the server's log")
	flag.StringVar(&env, "server-env", "", "extra server environment for every start, KEY=VALUE,KEY=VALUE")
	flag.IntVar(&o.drainN, "drain-n", 50000, "deliveries in the drain backlog (instant receiver) and the ceiling's")
	flag.IntVar(&o.drainSlowN, "drain-slow-n", 10000, "deliveries in the drain backlog with the slow receiver")
	flag.StringVar(&o.drainVars, "drain-variants", "a,b,c,d", "drain variants: a one endpoint instant, b one endpoint slow, c 100 subscriptions instant, d 100 slow")
	flag.IntVar(&o.drainCap, "drain-cap", 1000, "HOOKLINE_ENDPOINT_CONCURRENCY for the one-endpoint drains (high enough not to bind)")
	flag.DurationVar(&o.slowDelay, "slow-delay", 50*time.Millisecond, "answer delay of the slow receiver")
	flag.IntVar(&o.ceilWorkers, "ceiling-workers", 8, "ceiling: concurrent claim/record loops")
	flag.IntVar(&o.ceilBatch, "ceiling-batch", 50, "ceiling: rows per claim")
	flag.BoolVar(&o.ceilHTTP, "ceiling-http", true, "also run the ceiling with a POST of each claimed row to the receiver")
	flag.IntVar(&o.ingestN, "ingest-n", 20000, "ingest: events per variant (at most; see -ingest-time)")
	flag.DurationVar(&o.ingestDur, "ingest-time", 15*time.Second, "ingest: longest time per variant")
	flag.IntVar(&o.publishers, "publishers", 16, "ingest: concurrent keep-alive publishers")
	flag.IntVar(&o.payload, "payload", 1024, "payload size in bytes")
	flag.DurationVar(&o.latencyDur, "latency-time", 15*time.Second, "latency: length of the steady stream")
	flag.Float64Var(&o.latencyRate, "latency-rate", 500, "latency: the stream's events/s when neither drain (a) nor ingest ran in this run (with them, half the lower)")
	flag.IntVar(&o.idleN, "idle-n", 200, "idle pickup: events published one at a time")
	flag.DurationVar(&o.idleGap, "idle-gap", 20*time.Millisecond, "idle pickup: pause between events")
	flag.Float64Var(&o.retryRate, "retry-rate", 5, "retry under load: retries per second")
	flag.IntVar(&o.retryDead, "retry-dead", 2000, "retry under load: dead deliveries seeded to retry")
	flag.IntVar(&o.pagesN, "pages-n", 1000000, "pages: deliveries seeded")
	flag.BoolVar(&o.pages10m, "pages-10m", false, "pages: also measure with 10,000,000 deliveries (long)")
	flag.IntVar(&o.pagesBigN, "pages-10m-n", 10000000, "pages: deliveries seeded for -pages-10m")
	flag.IntVar(&o.pageCalls, "page-calls", 50, "pages: calls per page measured")
	flag.IntVar(&o.rssSmall, "rss-small", 100000, "rss: the small pending backlog")
	flag.IntVar(&o.rssLarge, "rss-large", 1000000, "rss: the large pending backlog")
	flag.StringVar(&o.scaleProcs, "scaling-procs", "1,2,3", "scaling: server process counts")
	flag.DurationVar(&o.slowPlan, "slow-plan", 20*time.Millisecond, "pages: log the plans of the server's statements slower than this (auto_explain; project-managed PostgreSQL only; 0: off)")
	flag.DurationVar(&o.drainSlowPlan, "drain-slow-plan", 0, "drain and scaling: log the plans of the server's statements slower than this, as -slow-plan (0: off, so the drain is not slowed)")
	flag.IntVar(&o.scaleN, "scaling-n", 20000, "scaling: deliveries in each backlog")
	flag.Float64Var(&o.limitRate, "ratelimit-rate", 100, "ratelimit: HOOKLINE_API_RATE_PER_SECOND of the limited run")
	flag.IntVar(&o.limitBurst, "ratelimit-burst", 0, "ratelimit: HOOKLINE_API_BURST of the limited run (0: its default, twice the rate)")
	flag.Float64Var(&o.limitQuiet, "ratelimit-quiet", 50, "ratelimit: the quiet tenant's steady publishes per second")
	flag.DurationVar(&o.limitDur, "ratelimit-time", 15*time.Second, "ratelimit: length of the quiet stream, alone and during the flood")
	flag.BoolVar(&o.limitIgnore, "ratelimit-ignore-retry-after", false, "ratelimit: the flooding publishers knock again at once after a 429 instead of waiting Retry-After")
	flag.IntVar(&o.goalRounds, "goal-rounds", 5, "goals: rounds of drain (a), the loop with a POST per row and drain (c), back to back")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "longest wait for one drain")
	diff := flag.Bool("diff", false, "compare two results files instead of running: bench -diff before.json after.json")
	flag.Parse()
	if *diff {
		if flag.NArg() != 2 {
			fmt.Fprintln(os.Stderr, "bench: -diff takes two results files")
			os.Exit(2)
		}
		if err := diffResults(os.Stdout, flag.Arg(0), flag.Arg(1)); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}

	o.only = map[string]bool{}
	if only == "" {
		for _, p := range allPhases {
			o.only[p] = true
		}
	} else {
		for p := range strings.SplitSeq(only, ",") {
			p = strings.TrimSpace(p)
			if !slices.Contains(allPhases, p) {
				fmt.Fprintf(os.Stderr, "bench: unknown phase %q; the phases are %s\n", p, strings.Join(allPhases, ","))
				os.Exit(2)
			}
			o.only[p] = true
		}
	}
	if env != "" {
		o.serverEnv = strings.Split(env, ",")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := pgdev.FindRepoRoot(wd)
	if err != nil {
		return err
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	if !o.noBuild {
		fmt.Println("building", o.serverBin, "from ./cmd/server")
		if err := buildServer(ctx, o.serverBin); err != nil {
			return err
		}
	}
	if o.serverBin, err = filepath.Abs(o.serverBin); err != nil {
		return err
	}
	b, err := newBench(ctx, o)
	if err != nil {
		return err
	}
	defer b.close()
	b.res.Machine.Server = b.res.Machine.Commit // built here from this tree
	if o.noBuild {
		b.res.Machine.Server = binaryCommit(o.serverBin) + " (" + o.serverBin + ")"
	}
	started := time.Now()
	fmt.Printf("machine: %d cores, %d MiB, PostgreSQL %s, %s, commit %s\n",
		b.res.Machine.Cores, b.res.Machine.MemoryMiB, b.res.Machine.PostgreSQL, b.res.Machine.Go, b.res.Machine.Commit)

	phases := map[string]func(context.Context) error{
		"ingest": b.ingest, "drain": b.drain, "ceiling": b.ceiling, "goals": b.goals, "latency": b.latency, "idle": b.idle,
		"retry": b.retry, "pages": b.pages, "rss": b.rss, "scaling": b.scaling, "ratelimit": b.ratelimit,
		"catalogue": b.catalogue, "tracing": b.tracing,
	}
	var failed []string
	for _, p := range allPhases {
		if !o.only[p] {
			continue
		}
		fmt.Printf("\n== %s\n", p)
		t := time.Now()
		if err := phases[p](ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Printf("%s: FAILED: %v\n", p, err)
			b.res.add(p, "error", 0, "", err.Error())
			failed = append(failed, p)
		}
		fmt.Printf("(%s took %s)\n", p, time.Since(t).Round(time.Second))
	}
	b.res.derive()
	b.res.markGoals()
	b.res.sortFigures()
	b.res.DurationS = time.Since(started).Seconds()
	fmt.Println()
	b.res.printTable(os.Stdout)
	if o.out != "" {
		if err := b.res.write(o.out); err != nil {
			return err
		}
		fmt.Println("\nwrote", o.out)
	}
	if bad := b.res.countingProblems(); bad != "" {
		return fmt.Errorf("counting: %s", bad)
	}
	if len(failed) > 0 {
		return fmt.Errorf("phases failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// binaryCommit is the git commit a Go binary was built from ("+dirty" with local changes), from its
// build info; "unknown" without one (GOFLAGS=-buildvcs=false, or built outside a git tree).
func binaryCommit(path string) string {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	rev, dirty := "unknown", ""
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	return rev + dirty
}
