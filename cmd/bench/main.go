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
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/phases"
	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/internal/pgdev"
)

// options are the flags main reads itself; the phases' own are phases.Options.
type options struct {
	phases.Options
	only    map[string]bool
	out     string
	noBuild bool
}

func main() {
	var o options
	var only, env string
	flag.StringVar(&only, "only", "", "comma-separated phases to run ("+strings.Join(phases.All, ",")+"); empty: all")
	flag.StringVar(&o.out, "out", "bench/results.json", "where to write the results (empty: nowhere)")
	flag.StringVar(&o.Server.Path, "server", "bin/server", "server binary (built from ./cmd/server unless -no-build)")
	flag.BoolVar(&o.noBuild, "no-build", false, "use -server as it is (it must match the source: the harness migrates each database with the migrations it was built with)")
	flag.BoolVar(&o.Server.ShowLog, "v", false, "show the server's log")
	flag.StringVar(&env, "server-env", "", "extra server environment for every start, KEY=VALUE,KEY=VALUE")
	flag.IntVar(&o.DrainN, "drain-n", 50000, "deliveries in the drain backlog (instant receiver) and the ceiling's")
	flag.IntVar(&o.DrainSlowN, "drain-slow-n", 10000, "deliveries in the drain backlog with the slow receiver")
	flag.StringVar(&o.DrainVars, "drain-variants", "a,b,c,d", "drain variants: a one endpoint instant, b one endpoint slow, c 100 subscriptions instant, d 100 slow")
	flag.IntVar(&o.DrainCap, "drain-cap", 1000, "HOOKLINE_ENDPOINT_CONCURRENCY for the one-endpoint drains (high enough not to bind)")
	flag.DurationVar(&o.SlowDelay, "slow-delay", 50*time.Millisecond, "answer delay of the slow receiver")
	flag.IntVar(&o.CeilWorkers, "ceiling-workers", 8, "ceiling: concurrent claim/record loops")
	flag.IntVar(&o.CeilBatch, "ceiling-batch", 50, "ceiling: rows per claim")
	flag.BoolVar(&o.CeilHTTP, "ceiling-http", true, "also run the ceiling with a POST of each claimed row to the receiver")
	flag.IntVar(&o.IngestN, "ingest-n", 20000, "ingest: events per variant (at most; see -ingest-time)")
	flag.DurationVar(&o.IngestDur, "ingest-time", 15*time.Second, "ingest: longest time per variant")
	flag.IntVar(&o.Publishers, "publishers", 16, "ingest: concurrent keep-alive publishers")
	flag.IntVar(&o.Payload, "payload", 1024, "payload size in bytes")
	flag.DurationVar(&o.LatencyDur, "latency-time", 15*time.Second, "latency: length of the steady stream")
	flag.Float64Var(&o.LatencyRate, "latency-rate", 500, "latency: the stream's events/s when neither drain (a) nor ingest ran in this run (with them, half the lower)")
	flag.IntVar(&o.IdleN, "idle-n", 200, "idle pickup: events published one at a time")
	flag.DurationVar(&o.IdleGap, "idle-gap", 20*time.Millisecond, "idle pickup: pause between events")
	flag.IntVar(&o.AgedN, "aged-n", 40000, "aged: deliveries drained through the server between its fresh and its aged measurement")
	flag.StringVar(&o.AgedAutovacuum, "aged-autovacuum", "on,off", "aged: on (the cluster's default settings), off (autovacuum off for every table of the phase's database), or both")
	flag.BoolVar(&o.AgedDiagnose, "aged-diagnose", false, "aged: then measure a new server process on the aged database, and again after a VACUUM of webhook_deliveries")
	flag.Float64Var(&o.RetryRate, "retry-rate", 5, "retry under load: retries per second")
	flag.IntVar(&o.RetryDead, "retry-dead", 2000, "retry under load: dead deliveries seeded to retry")
	flag.IntVar(&o.PagesN, "pages-n", 1000000, "pages: deliveries seeded")
	flag.BoolVar(&o.Pages10m, "pages-10m", false, "pages: also measure with 10,000,000 deliveries (long)")
	flag.IntVar(&o.PagesBigN, "pages-10m-n", 10000000, "pages: deliveries seeded for -pages-10m")
	flag.IntVar(&o.PageCalls, "page-calls", 50, "pages: calls per page measured")
	flag.IntVar(&o.RSSSmall, "rss-small", 100000, "rss: the small pending backlog")
	flag.IntVar(&o.RSSLarge, "rss-large", 1000000, "rss: the large pending backlog")
	flag.StringVar(&o.ScaleProcs, "scaling-procs", "1,2,3", "scaling: server process counts")
	flag.DurationVar(&o.SlowPlan, "slow-plan", 20*time.Millisecond, "pages: log the plans of the server's statements slower than this (auto_explain; project-managed PostgreSQL only; 0: off)")
	flag.DurationVar(&o.DrainSlowPlan, "drain-slow-plan", 0, "drain, scaling and aged: log the plans of the server's statements slower than this, as -slow-plan (0: off, so the drain is not slowed)")
	flag.IntVar(&o.ScaleN, "scaling-n", 20000, "scaling: deliveries in each backlog")
	flag.Float64Var(&o.LimitRate, "ratelimit-rate", 100, "ratelimit: HOOKLINE_API_RATE_PER_SECOND of the limited run")
	flag.IntVar(&o.LimitBurst, "ratelimit-burst", 0, "ratelimit: HOOKLINE_API_BURST of the limited run (0: its default, twice the rate)")
	flag.Float64Var(&o.LimitQuiet, "ratelimit-quiet", 50, "ratelimit: the quiet tenant's steady publishes per second")
	flag.DurationVar(&o.LimitDur, "ratelimit-time", 15*time.Second, "ratelimit: length of the quiet stream, alone and during the flood")
	flag.BoolVar(&o.LimitIgnore, "ratelimit-ignore-retry-after", false, "ratelimit: the flooding publishers knock again at once after a 429 instead of waiting Retry-After")
	flag.IntVar(&o.GoalRounds, "goal-rounds", 5, "goals: rounds of drain (a), the loop with a POST per row and drain (c), back to back")
	flag.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "longest wait for one drain")

	// The history at scale phases.
	flag.IntVar(&o.History.Deliveries, "history-n", 2000000, "history: deliveries of history loaded in SQL between the two measurements")
	flag.IntVar(&o.History.Days, "history-days", 2, "history: the days before today the history is spread over")
	flag.IntVar(&o.History.Rounds, "history-rounds", 3, "history: drains (a) of -drain-n measured with an empty history and with the history (median)")
	flag.IntVar(&o.History.LoadWorkers, "history-load-workers", 2, "history and retention: days loaded at once")
	flag.IntVar(&o.History.DropN, "retention-drop-n", 1000000, "retention: deliveries of the day whose partitions are dropped during a drain")
	flag.IntVar(&o.History.DayN, "retention-day-n", 250000, "retention: deliveries of each simulated day")
	flag.IntVar(&o.History.SimDays, "retention-days", 5, "retention: days simulated, each loaded and then swept at its end")
	flag.DurationVar(&o.History.Keep, "retention-keep", 24*time.Hour, "retention: delivered and dead retention of the simulated days")
	diff := flag.Bool("diff", false, "compare two results files instead of running: bench -diff before.json after.json")
	flag.Parse()
	if *diff {
		if flag.NArg() != 2 {
			fmt.Fprintln(os.Stderr, "bench: -diff takes two results files")
			os.Exit(2)
		}
		if err := report.Diff(os.Stdout, flag.Arg(0), flag.Arg(1)); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}

	o.only = map[string]bool{}
	if only == "" {
		for _, p := range phases.All {
			o.only[p] = true
		}
	} else {
		for p := range strings.SplitSeq(only, ",") {
			p = strings.TrimSpace(p)
			if !slices.Contains(phases.All, p) {
				fmt.Fprintf(os.Stderr, "bench: unknown phase %q; the phases are %s\n", p, strings.Join(phases.All, ","))
				os.Exit(2)
			}
			o.only[p] = true
		}
	}
	if env != "" {
		o.Server.Env = strings.Split(env, ",")
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
		fmt.Println("building", o.Server.Path, "from ./cmd/server")
		if err := buildServer(ctx, o.Server.Path); err != nil {
			return err
		}
	}
	if o.Server.Path, err = filepath.Abs(o.Server.Path); err != nil {
		return err
	}
	b, err := phases.New(ctx, o.Options)
	if err != nil {
		return err
	}
	defer b.Close()
	res := b.Results()
	res.Machine.Server = res.Machine.Commit // built here from this tree
	if o.noBuild {
		res.Machine.Server = binaryCommit(o.Server.Path) + " (" + o.Server.Path + ")"
	}
	started := time.Now()
	fmt.Printf("machine: %d cores, %d MiB, PostgreSQL %s, %s, commit %s\n",
		res.Machine.Cores, res.Machine.MemoryMiB, res.Machine.PostgreSQL, res.Machine.Go, res.Machine.Commit)

	var failed []string
	for _, p := range phases.All {
		if !o.only[p] {
			continue
		}
		fmt.Printf("\n== %s\n", p)
		t := time.Now()
		if err := b.Run(ctx, p); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Printf("%s: FAILED: %v\n", p, err)
			res.Add(p, "error", 0, "", err.Error())
			failed = append(failed, p)
		}
		fmt.Printf("(%s took %s)\n", p, time.Since(t).Round(time.Second))
	}
	res.Derive()
	res.MarkGoals()
	res.SortFigures(phases.All)
	res.DurationS = time.Since(started).Seconds()
	fmt.Println()
	res.PrintTable(os.Stdout)
	if o.out != "" {
		if err := res.Write(o.out); err != nil {
			return err
		}
		fmt.Println("\nwrote", o.out)
	}
	if bad := res.CountingProblems(); bad != "" {
		return fmt.Errorf("counting: %s", bad)
	}
	if len(failed) > 0 {
		return fmt.Errorf("phases failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

func buildServer(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/server")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
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
