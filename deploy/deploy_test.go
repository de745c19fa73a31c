// Package deploy_test checks the monitoring files operators load as they are: the Prometheus alerting
// rules (deploy/prometheus/alerts.yml) with Prometheus' own rule parser, and the Grafana dashboard
// (deploy/grafana/hookline.json). A rule or panel naming a metric Hookline does not export would stay
// silent forever rather than fail, so every name is compared with what a real server's /metrics serves.
package deploy_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

var dbURL string

func TestMain(m *testing.M) {
	testdb.Main(m, "deploy", func(u string) { dbURL = u })
}

const (
	alertsFile    = "prometheus/alerts.yml"
	dashboardFile = "grafana/hookline.json"
)

// synthetic are series Prometheus makes itself for every scrape target, not served on /metrics.
var synthetic = map[string]bool{"up": true}

var (
	exportedMu    sync.Mutex
	exportedNames map[string]bool
)

// exported returns the sample names a real server serves on /metrics (histograms as their _bucket, _sum and
// _count series, as PromQL names them). The server is started once and the names kept for later tests.
// It also checks the wiring of the ingest counter: one publish through the server's Publisher shows on
// its /metrics.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	exportedMu.Lock()
	defer exportedMu.Unlock()
	if exportedNames != nil {
		return exportedNames
	}
	srv, base := servertest.Start(t, servertest.Config(t, dbURL), nil, server.Options{})
	tn, err := srv.Tenants.CreateTenant(t.Context(), "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Publisher.Publish(t.Context(), publish.PublishInput{TenantID: tn.ID, EventType: "deploy.checked", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", res.Status)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, labelsPart, _ := strings.Cut(name, "{")
		names[name] = true
		if name == "webhook_events_published_total" && labelsPart == "" && !strings.HasSuffix(line, " 1") {
			t.Errorf("the server's Publisher does not count on /metrics: %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !names["webhook_events_published_total"] || !names["webhook_deliveries_finished_total"] {
		t.Fatalf("/metrics lacks the ingest and finished counters")
	}
	exportedNames = names
	return names
}

// promql is the PromQL parser the rules are checked with: Prometheus' defaults.
var promql = parser.NewParser(parser.Options{})

// metricNames returns the metric names expr selects, or an error when it does not parse or selects a
// series without naming its metric.
func metricNames(expr string) ([]string, error) {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, sel := range parser.ExtractSelectors(e) {
		name := ""
		for _, m := range sel {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			return nil, fmt.Errorf("a selector without a metric name: %v", sel)
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, errors.New("names no metric")
	}
	return names, nil
}

// unknownMetrics returns an error for each name neither exported nor made by Prometheus.
func unknownMetrics(where, expr string, exp map[string]bool) []error {
	names, err := metricNames(expr)
	if err != nil {
		return []error{fmt.Errorf("%s: %q: %w", where, expr, err)}
	}
	var errs []error
	for _, n := range names {
		if !exp[n] && !synthetic[n] {
			errs = append(errs, fmt.Errorf("%s: metric %s is not exported by Hookline", where, n))
		}
	}
	return errs
}

var severities = []string{"critical", "warning", "info"}

// checkRules validates a rule file as Prometheus loads it (YAML, unknown fields, PromQL, templates), then
// what an operator needs: a severity, a summary and a runbook on every alert, and only real metrics.
func checkRules(content []byte, exp map[string]bool) (alerts []string, errs []error) {
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, errs
	}
	if len(groups.Groups) == 0 {
		return nil, []error{errors.New("no rule groups")}
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
				if !slices.Contains(severities, r.Labels["severity"]) {
					errs = append(errs, fmt.Errorf("%s: severity %q, want one of %v", name, r.Labels["severity"], severities))
				}
				for _, a := range []string{"summary", "runbook"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						errs = append(errs, fmt.Errorf("%s: no %s annotation", name, a))
					}
				}
			}
			errs = append(errs, unknownMetrics(name, r.Expr, exp)...)
		}
	}
	return alerts, errs
}

func TestAlertRules(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	alerts, errs := checkRules(content, exported(t))
	for _, err := range errs {
		t.Errorf("%s: %v", alertsFile, err)
	}
	for _, want := range []string{"WebhookDLQRateHigh", "WebhookQueueLagHigh", "WebhookAttemptFailureRatioHigh", "HooklineInstanceDown", "WebhookCircuitsOpen",
		"HooklineHistoryPartitionsRunningShort", "HooklineHistoryRetentionBehind"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("%s: no alert %s (have %v)", alertsFile, want, alerts)
		}
	}
}

// dashboard is the part of Grafana's dashboard model the checks read.
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *datasourceRef           `json:"datasource"`
	GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

// grafanaVars are the values the dashboard's variables take for parsing: Grafana's interval macros and
// the dashboard's own variables. A variable not listed here is an error, so a typo cannot slip through.
var grafanaVars = map[string]string{"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "job": "hookline"}

var grafanaVarRE = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

func expand(expr string) (string, error) {
	var bad []string
	out := grafanaVarRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVarRE.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if v, ok := grafanaVars[name]; ok {
			return v
		}
		bad = append(bad, name)
		return m
	})
	if len(bad) > 0 {
		return "", fmt.Errorf("unknown variables %v", bad)
	}
	return out, nil
}

// requiredPanels are the panels operators are promised, each with a metric its queries must use.
var requiredPanels = []struct{ title, metric string }{
	{"Ingest (events/s)", "webhook_events_published_total"},
	{"Deliveries finished by state", "webhook_deliveries_finished_total"},
	{"Attempts by outcome", "webhook_delivery_attempts_total"},
	{"Attempt latency p50 / p95", "webhook_delivery_attempt_duration_seconds_bucket"},
	{"Queue lag", "webhook_queue_lag_seconds"},
	{"Pending", "webhook_deliveries_pending"},
	{"Dead letters", "webhook_deliveries_dead"},
	{"Dead-letter rate (15 min)", "webhook_deliveries_finished_total"},
	{"Open circuits", "webhook_subscriptions_circuit_open"},
	{"Open circuits / disabled subscriptions", "webhook_subscriptions_disabled"},
}

// checkDashboard validates a dashboard: JSON, a Prometheus data source variable every panel and query
// uses, the promised panels, and PromQL that parses and names only real metrics.
func checkDashboard(content []byte, exp map[string]bool) []error {
	var d dashboard
	if err := json.Unmarshal(content, &d); err != nil {
		return []error{fmt.Errorf("not valid JSON: %w", err)}
	}
	var errs []error
	if d.Title == "" || d.UID == "" {
		errs = append(errs, errors.New("no title or uid"))
	}
	if d.SchemaVersion < 36 { // 36: data sources referenced by {type, uid}, as the panels do
		errs = append(errs, fmt.Errorf("schemaVersion %d, want 36 or later", d.SchemaVersion))
	}
	hasDS := slices.ContainsFunc(d.Templating.List, func(v struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Query any    `json:"query"`
	}) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	})
	if !hasDS {
		errs = append(errs, errors.New(`no "datasource" variable of type datasource for prometheus`))
	}
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	exprs := map[string][]string{} // title -> metric names
	ids := map[int]bool{}
	for _, p := range all {
		if p.Type == "row" {
			continue
		}
		where := fmt.Sprintf("panel %q", p.Title)
		if ids[p.ID] {
			errs = append(errs, fmt.Errorf("%s: id %d used twice", where, p.ID))
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			errs = append(errs, fmt.Errorf("%s: gridPos %+v outside Grafana's 24 columns", where, p.GridPos))
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			errs = append(errs, fmt.Errorf("%s: data source %+v, want the ${datasource} variable", where, p.Datasource))
		}
		if len(p.Targets) == 0 {
			errs = append(errs, fmt.Errorf("%s: no queries", where))
		}
		for _, tg := range p.Targets {
			w := fmt.Sprintf("%s query %s", where, tg.RefID)
			if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
				errs = append(errs, fmt.Errorf("%s: data source %+v, want the ${datasource} variable", w, tg.Datasource))
			}
			expr, err := expand(tg.Expr)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", w, err))
				continue
			}
			errs = append(errs, unknownMetrics(w, expr, exp)...)
			names, _ := metricNames(expr)
			exprs[p.Title] = append(exprs[p.Title], names...)
		}
	}
	for _, rp := range requiredPanels {
		names, ok := exprs[rp.title]
		if !ok {
			errs = append(errs, fmt.Errorf("no panel %q", rp.title))
		} else if !slices.Contains(names, rp.metric) {
			errs = append(errs, fmt.Errorf("panel %q does not query %s", rp.title, rp.metric))
		}
	}
	return errs
}

func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range checkDashboard(content, exported(t)) {
		t.Errorf("%s: %v", dashboardFile, err)
	}
}

// The checks are only worth their passes if they fail: each broken variant must be refused.
func TestChecksRefuseMistakes(t *testing.T) {
	t.Parallel()
	exp := map[string]bool{"webhook_queue_lag_seconds": true, "webhook_delivery_attempts_total": true}
	rule := func(expr, extra string) string {
		return fmt.Sprintf(`groups:
  - name: g
    rules:
      - alert: A
        expr: %s
        labels:
          severity: warning
        annotations:
          summary: "lag {{ $value }}"
          runbook: look at /admin%s
`, expr, extra)
	}
	if _, errs := checkRules([]byte(rule("max(webhook_queue_lag_seconds) > 300", "")), exp); len(errs) > 0 {
		t.Fatalf("a good rule refused: %v", errs)
	}
	for name, content := range map[string]string{
		"malformed YAML":          "groups:\n  - name: g\n   rules: [",
		"expression not PromQL":   rule("sum(rate(webhook_delivery_attempts_total[5m]) > 1", ""),
		"unknown metric":          rule("webhook_queue_lag > 300", ""),
		"unknown field":           rule("max(webhook_queue_lag_seconds) > 300", "\n        anotations: {}"),
		"bad template":            strings.Replace(rule("max(webhook_queue_lag_seconds) > 300", ""), "{{ $value }}", "{{ $value | nosuchfunc }}", 1),
		"no runbook":              strings.Replace(rule("max(webhook_queue_lag_seconds) > 300", ""), "runbook: look at /admin", "runbook: ''", 1),
		"no severity":             strings.Replace(rule("max(webhook_queue_lag_seconds) > 300", ""), "severity: warning", "team: ops", 1),
		"selector without a name": rule(`'{job="hookline"} > 0'`, ""),
	} {
		if _, errs := checkRules([]byte(content), exp); len(errs) == 0 {
			t.Errorf("rules, %s: accepted", name)
		} else {
			t.Logf("rules, %s: refused: %v", name, errs[0])
		}
	}

	good, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	full := exported(t)
	for name, broken := range map[string]string{
		"not JSON":              string(good[:len(good)/2]),
		"expression not PromQL": strings.Replace(string(good), "sum(rate(webhook_events_published_total", "sum(rate(webhook_events_published_total[", 1),
		"unknown metric":        strings.Replace(string(good), "webhook_events_published_total", "webhook_events_total", 1),
		"unknown variable":      strings.Replace(string(good), "$__rate_interval", "$__rate_intervall", 1),
		"no datasource var":     strings.Replace(string(good), `"query": "prometheus"`, `"query": "loki"`, 1),
		"a panel missing":       strings.Replace(string(good), `"title": "Attempts by outcome"`, `"title": "Attempts"`, 1),
	} {
		if broken == string(good) {
			t.Fatalf("dashboard, %s: the mutation did not apply", name)
		}
		if errs := checkDashboard([]byte(broken), full); len(errs) == 0 {
			t.Errorf("dashboard, %s: accepted", name)
		} else {
			t.Logf("dashboard, %s: refused: %v", name, errs[0])
		}
	}
}
