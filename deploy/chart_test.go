package deploy_test

// The Helm chart (deploy/helm/hookline) rendered by helm itself, each manifest decoded strictly into its
// Kubernetes API type, and deploy/compose.yaml decoded strictly into the part of the Compose format it uses.
// k8s.io/api is imported by these tests only: the server binary links none of it, and the main module
// already requires k8s.io/apimachinery through Prometheus, so it stays here rather than in tools/go.mod
// (which `go test ./...` would not run).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

const (
	chartDir    = "helm/hookline"
	kubeVersion = "1.34.0" // the Makefile's KUBE_VERSION
)

// helm runs the helm pinned in tools/go.mod (built on first use, which takes minutes on a fresh machine).
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "-modfile=../tools/go.mod", "helm"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// rendered are the manifests of one `helm template`, decoded strictly.
type rendered struct {
	deployment     *appsv1.Deployment
	service        *corev1.Service
	pdb            *policyv1.PodDisruptionBudget
	serviceMonitor *serviceMonitor
	prometheusRule *prometheusRule
}

// The Prometheus Operator's CRDs are not in k8s.io/api: these are the parts the chart writes, decoded with
// unknown fields refused, so a misspelt field still fails.
type objectMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type serviceMonitor struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		JobLabel string `yaml:"jobLabel"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Endpoints []struct {
			Port     string `yaml:"port"`
			Path     string `yaml:"path"`
			Interval string `yaml:"interval"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type prometheusRule struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   objectMeta     `yaml:"metadata"`
	Spec       map[string]any `yaml:"spec"` // compared whole with deploy/prometheus/alerts.yml
}

func strictYAML(doc []byte, into any) error {
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	return dec.Decode(into)
}

// decodeManifests splits helm's output and decodes each document into its type, refusing unknown fields
// (sigs.k8s.io/yaml's strict mode: YAML to JSON, then the API type's JSON decoding).
func decodeManifests(out string) (rendered, error) {
	var r rendered
	for doc := range strings.SplitSeq(out, "\n---") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		var head struct{ APIVersion, Kind string }
		if err := sigsyaml.Unmarshal([]byte(doc), &head); err != nil {
			return r, fmt.Errorf("not YAML: %w\n%s", err, doc)
		}
		if head.Kind == "" {
			continue // a template that rendered nothing
		}
		var err error
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			r.deployment = new(appsv1.Deployment)
			err = sigsyaml.UnmarshalStrict([]byte(doc), r.deployment)
		case "v1 Service":
			r.service = new(corev1.Service)
			err = sigsyaml.UnmarshalStrict([]byte(doc), r.service)
		case "policy/v1 PodDisruptionBudget":
			r.pdb = new(policyv1.PodDisruptionBudget)
			err = sigsyaml.UnmarshalStrict([]byte(doc), r.pdb)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			r.serviceMonitor = new(serviceMonitor)
			err = strictYAML([]byte(doc), r.serviceMonitor)
		case "monitoring.coreos.com/v1 PrometheusRule":
			r.prometheusRule = new(prometheusRule)
			err = strictYAML([]byte(doc), r.prometheusRule)
		default:
			err = errors.New("a kind the chart should not render")
		}
		if err != nil {
			return r, fmt.Errorf("%s %s: %w", head.APIVersion, head.Kind, err)
		}
	}
	return r, nil
}

// configVariables are the settings the server reads: the variable names of internal/config's table.
func configVariables(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../internal/config/config.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`\{"((?:HOOKLINE_|DATABASE_URL)[A-Z_]*)", "`).FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	if len(names) < 40 || !slices.Contains(names, "HOOKLINE_ATTEMPT_TIMEOUT") {
		t.Fatalf("read %d variables from internal/config/config.go: has its table changed shape?", len(names))
	}
	return names
}

// chartValues are the parts of values.yaml the checks read.
type chartValues struct {
	Secrets map[string]struct {
		Name string `yaml:"name"`
		Key  string `yaml:"key"`
	} `yaml:"secrets"`
	Config map[string]any `yaml:"config"`
}

// checkValues: every setting of the server is a value, a plain one or a Secret reference, never both.
func checkValues(content []byte, variables []string) []error {
	var v chartValues
	if err := yaml.Unmarshal(content, &v); err != nil {
		return []error{err}
	}
	var errs []error
	for _, name := range variables {
		_, plain := v.Config[name]
		_, secret := v.Secrets[name]
		switch {
		case !plain && !secret:
			errs = append(errs, fmt.Errorf("values.yaml does not name %s (under config or secrets)", name))
		case plain && secret:
			errs = append(errs, fmt.Errorf("values.yaml names %s both under config and secrets", name))
		}
	}
	for name := range v.Config {
		if !slices.Contains(variables, name) {
			errs = append(errs, fmt.Errorf("values.yaml config.%s: the server reads no such variable", name))
		}
	}
	for name := range v.Secrets {
		if !slices.Contains(variables, name) {
			errs = append(errs, fmt.Errorf("values.yaml secrets.%s: the server reads no such variable", name))
		}
	}
	for _, name := range []string{"DATABASE_URL", "HOOKLINE_SECRET_KEY", "HOOKLINE_ADMIN_TOKEN"} {
		if v.Secrets[name].Name == "" || v.Secrets[name].Key == "" {
			errs = append(errs, fmt.Errorf("values.yaml: %s must come from a Secret (secrets.%s.name and key)", name, name))
		}
	}
	return errs
}

func TestChartValuesNameEverySetting(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vars := configVariables(t)
	for _, err := range checkValues(content, vars) {
		t.Error(err)
	}
	// The check must fail when a setting is missing or misspelt.
	broken := strings.Replace(string(content), "HOOKLINE_RETRY_WINDOW:", "HOOKLINE_RETRY_WINDOWS:", 1)
	if broken == string(content) {
		t.Fatal("mutation did not apply")
	}
	if errs := checkValues([]byte(broken), vars); len(errs) != 2 {
		t.Errorf("a misspelt setting gave %v, want two errors (missing, unknown)", errs)
	}
}

// The PrometheusRule ships the same rules as deploy/prometheus/alerts.yml: the chart holds a copy, since
// helm reads only files inside the chart.
func TestChartAlertsAreTheShippedOnes(t *testing.T) {
	t.Parallel()
	shipped, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(chartDir, "files/alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shipped, copied) {
		t.Errorf("%s/files/alerts.yml differs from %s: cp %s %s/files/alerts.yml", chartDir, alertsFile, alertsFile, chartDir)
	}
}

// attemptTimeout is HOOKLINE_ATTEMPT_TIMEOUT as the container gets it (the server's default when unset).
func attemptTimeout(c corev1.Container) (time.Duration, error) {
	for _, e := range c.Env {
		if e.Name == "HOOKLINE_ATTEMPT_TIMEOUT" {
			return time.ParseDuration(e.Value)
		}
	}
	return 15 * time.Second, nil
}

// checkDeployment checks what the chart promises of the Deployment.
func checkDeployment(d *appsv1.Deployment) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		fail("replicas %s, want 2", deref(d.Spec.Replicas))
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate == nil ||
		d.Spec.Strategy.RollingUpdate.MaxUnavailable == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		fail("strategy %+v, want a rolling update with maxUnavailable 0", d.Spec.Strategy)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		return append(errs, fmt.Errorf("%d containers, want 1", len(pod.Containers)))
	}
	c := pod.Containers[0]
	if !reflect.DeepEqual(d.Spec.Selector.MatchLabels, filterLabels(d.Spec.Template.Labels, d.Spec.Selector.MatchLabels)) {
		fail("the selector %v does not select the pod's labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	timeout, err := attemptTimeout(c)
	if err != nil {
		fail("HOOKLINE_ATTEMPT_TIMEOUT: %v", err)
	}
	// The server exits within the attempt timeout + 10 s after SIGTERM; Kubernetes must not kill it before.
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second <= timeout+10*time.Second {
		fail("terminationGracePeriodSeconds %s, want more than the attempt timeout %s + 10 s", deref(pod.TerminationGracePeriodSeconds), timeout)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			fail("%s probe %+v, want GET %s on the http port", name, p, path)
		}
	}
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("liveness", c.LivenessProbe, "/healthz")
	// A start migrates before it listens, after waiting up to 5 minutes for another replica's migration lock:
	// liveness must not restart it meanwhile.
	probe("startup", c.StartupProbe, "/healthz")
	if p := c.StartupProbe; p != nil && time.Duration(p.PeriodSeconds*p.FailureThreshold)*time.Second < 5*time.Minute {
		fail("the startup probe gives a start %d × %d s, want at least the 5 minutes a start may wait for the migration lock", p.FailureThreshold, p.PeriodSeconds)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		fail("ports %+v, want http on 8080", c.Ports)
	}
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
		fail("pod securityContext %+v, want runAsNonRoot and uid 65532", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		fail("container securityContext %+v, want uid 65532, a read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		fail("resource requests %v, want cpu and memory", c.Resources.Requests)
	}
	secretRefs := map[string]bool{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "" && e.ValueFrom.SecretKeyRef.Key != "" {
			secretRefs[e.Name] = true
		}
	}
	for _, name := range []string{"DATABASE_URL", "HOOKLINE_SECRET_KEY", "HOOKLINE_ADMIN_TOKEN"} {
		if !secretRefs[name] {
			fail("%s is not read from a Secret (secretKeyRef)", name)
		}
	}
	return errs
}

// deref prints what a pointer points at, or "unset".
func deref[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

func filterLabels(labels, keys map[string]string) map[string]string {
	out := map[string]string{}
	for k := range keys {
		if v, ok := labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

func TestChart(t *testing.T) {
	t.Parallel()
	if out, err := helm(t, "lint", "--strict", chartDir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := helm(t, "template", "hookline", chartDir, "--kube-version", kubeVersion,
		"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	r, err := decodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.deployment == nil || r.service == nil || r.pdb == nil || r.serviceMonitor == nil || r.prometheusRule == nil {
		t.Fatalf("rendered %+v, want a Deployment, Service, PodDisruptionBudget, ServiceMonitor and PrometheusRule", r)
	}
	for _, err := range checkDeployment(r.deployment) {
		t.Error("Deployment:", err)
	}
	pod := r.deployment.Spec.Template
	if !reflect.DeepEqual(r.service.Spec.Selector, filterLabels(pod.Labels, r.service.Spec.Selector)) || len(r.service.Spec.Selector) == 0 {
		t.Errorf("the Service selects %v, not the pods (%v)", r.service.Spec.Selector, pod.Labels)
	}
	if len(r.service.Spec.Ports) != 1 || r.service.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports %+v, want one to the http port", r.service.Spec.Ports)
	}
	if r.pdb.Spec.MinAvailable == nil || r.pdb.Spec.MinAvailable.IntValue() != 1 ||
		!reflect.DeepEqual(r.pdb.Spec.Selector.MatchLabels, r.deployment.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget %+v, want minAvailable 1 of the Deployment's pods", r.pdb.Spec)
	}
	sm := r.serviceMonitor.Spec
	if r.service.Labels[sm.JobLabel] != "hookline" || len(sm.Endpoints) != 1 || sm.Endpoints[0].Port != "http" || sm.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor %+v: want /metrics on the http port as job hookline (the Service's %q label)", sm, sm.JobLabel)
	}
	var shipped map[string]any
	content, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(content, &shipped); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.prometheusRule.Spec, shipped) {
		t.Errorf("the PrometheusRule's spec is not %s", alertsFile)
	}
	// The rules' own checks (PromQL, metrics served) run on the rendered spec too.
	spec, err := yaml.Marshal(r.prometheusRule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := checkRules(spec, exported(t)); len(errs) > 0 {
		t.Errorf("the PrometheusRule's rules: %v", errs)
	}

	// Optional objects stay out by default; a longer attempt timeout lengthens the grace period.
	out, err = helm(t, "template", "hookline", chartDir, "--kube-version", kubeVersion, "--set", "config.HOOKLINE_ATTEMPT_TIMEOUT=2m")
	if err != nil {
		t.Fatal(err)
	}
	if r, err = decodeManifests(out); err != nil {
		t.Fatal(err)
	}
	if r.serviceMonitor != nil || r.prometheusRule != nil {
		t.Error("the ServiceMonitor or PrometheusRule is rendered by default")
	}
	if g := r.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g <= 130 {
		t.Errorf("with a 2m attempt timeout, terminationGracePeriodSeconds is %s, want more than 130", deref(g))
	}
	for _, err := range checkDeployment(r.deployment) {
		t.Error("Deployment with a 2m attempt timeout:", err)
	}
	// A timeout the chart cannot size the grace period from, or a missing Secret, is refused, not guessed.
	for _, set := range []string{"config.HOOKLINE_ATTEMPT_TIMEOUT=1500ms", "secrets.DATABASE_URL.name="} {
		if _, err := helm(t, "template", "hookline", chartDir, "--kube-version", kubeVersion, "--set", set); err == nil {
			t.Errorf("helm template --set %s: rendered", set)
		}
	}
}

// The checks fail on what they are there to catch.
func TestChartChecksRefuseMistakes(t *testing.T) {
	t.Parallel()
	out, err := helm(t, "template", "hookline", chartDir, "--kube-version", kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string][2]string{
		"unknown field":          {"revisionHistoryLimit: 5", "revisionHistoryLimt: 5"},
		"grace too short":        {"terminationGracePeriodSeconds: 40", "terminationGracePeriodSeconds: 25"},
		"writable root":          {"readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false"},
		"wrong readiness path":   {"path: /readyz", "path: /healthz"},
		"secret as plain value":  {"valueFrom:\n                secretKeyRef:\n                  name: \"hookline\"\n                  key: \"database-url\"", "value: postgres://x"},
		"privilege escalation":   {"allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true"},
		"wrong type of a field":  {"replicas: 2", "replicas: two"},
		"root user":              {"runAsUser: 65532\n        runAsGroup", "runAsUser: 0\n        runAsGroup"},
		"no resource requests":   {"requests:\n              cpu: 100m\n              memory: 128Mi", "requests: {}"},
		"a single replica":       {"replicas: 2", "replicas: 1"},
		"recreate, not rolling":  {"type: RollingUpdate", "type: Recreate"},
		"liveness on readyz too": {"path: /healthz\n              port: http\n            failureThreshold: 6", "path: /readyz\n              port: http\n            failureThreshold: 6"},
		"no startup probe":       {"\n          startupProbe:\n            httpGet:\n              path: /healthz\n              port: http\n            failureThreshold: 120\n            periodSeconds: 5\n            timeoutSeconds: 3\n", "\n"},
		"short startup probe":    {"failureThreshold: 120", "failureThreshold: 12"},
	} {
		broken := strings.Replace(out, mutate[0], mutate[1], 1)
		if broken == out {
			t.Fatalf("%s: the mutation did not apply", name)
		}
		r, err := decodeManifests(broken)
		if err == nil && r.deployment != nil {
			if errs := checkDeployment(r.deployment); len(errs) > 0 {
				err = errs[0]
			}
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
	}
}

// compose is the part of the Compose file format deploy/compose.yaml uses; decoding refuses anything else.
type compose struct {
	Name     string `yaml:"name"`
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Profiles    []string          `yaml:"profiles"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		DependsOn   yaml.Node         `yaml:"depends_on"` // a list or a map of conditions
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		Healthcheck *struct {
			Test        []string `yaml:"test"`
			Interval    string   `yaml:"interval"`
			Timeout     string   `yaml:"timeout"`
			Retries     int      `yaml:"retries"`
			StartPeriod string   `yaml:"start_period"`
		} `yaml:"healthcheck"`
		StopGracePeriod string `yaml:"stop_grace_period"`
		Restart         string `yaml:"restart"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// mounts returns a service's bind mounts (host path relative to deploy/ -> container path) and named volumes.
func mounts(vols []string) (binds map[string]string, named []string) {
	binds = map[string]string{}
	for _, v := range vols {
		parts := strings.Split(v, ":")
		if strings.HasPrefix(parts[0], ".") || strings.HasPrefix(parts[0], "/") {
			binds[parts[0]] = parts[1]
		} else {
			named = append(named, parts[0])
		}
	}
	return binds, named
}

func TestCompose(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := strictYAML(content, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, want := range []string{"postgres", "hookline", "prometheus", "grafana"} {
		if _, ok := c.Services[want]; !ok {
			t.Fatalf("compose.yaml has no %s service", want)
		}
	}
	checkComposeServices(t, c)

	// Every mounted file exists, and the monitoring services find what they load where it is mounted.
	inContainer := composeMounts(t, c)
	checkPrometheusMounts(t, inContainer)
	checkGrafanaMounts(t, inContainer)

	// Strict decoding is what catches a misspelt key.
	broken := strings.Replace(string(content), "healthcheck:", "helthcheck:", 1)
	if err := strictYAML([]byte(broken), &compose{}); err == nil {
		t.Error("a misspelt key in compose.yaml was accepted")
	}
}

// checkComposeServices checks the hookline service (its image, database, secrets, health check, grace
// period and start order) and the postgres service it waits for.
func checkComposeServices(t *testing.T, c compose) {
	t.Helper()
	hl := c.Services["hookline"]
	if hl.Image != "hookline:latest" || len(hl.Profiles) != 0 {
		t.Errorf("hookline: image %q profiles %v, want hookline:latest (as make image's tarball loads) in the default profile", hl.Image, hl.Profiles)
	}
	dbURL := strings.NewReplacer("${POSTGRES_PASSWORD:-hookline}", "pw").Replace(hl.Environment["DATABASE_URL"])
	u, err := url.Parse(dbURL)
	if err != nil || u.Hostname() != "postgres" {
		t.Errorf("hookline: DATABASE_URL %q does not point at the postgres service", hl.Environment["DATABASE_URL"])
	}
	for _, name := range []string{"HOOKLINE_SECRET_KEY", "HOOKLINE_ADMIN_TOKEN"} {
		if !strings.Contains(hl.Environment[name], ":?") {
			t.Errorf("hookline: %s = %q, want one the operator must give (${%s:?...})", name, hl.Environment[name], name)
		}
	}
	// The image has no shell: the health check is the binary asking its own /readyz.
	if hl.Healthcheck == nil || !slices.Equal(hl.Healthcheck.Test, []string{"CMD", "/hookline", "healthcheck"}) {
		t.Errorf("hookline: healthcheck %+v, want [CMD /hookline healthcheck]", hl.Healthcheck)
	}
	if d, err := time.ParseDuration(hl.StopGracePeriod); err != nil || d <= 25*time.Second {
		t.Errorf("hookline: stop_grace_period %q, want more than the attempt timeout (15 s) + 10 s", hl.StopGracePeriod)
	}
	var deps map[string]struct {
		Condition string `yaml:"condition"`
	}
	if err := hl.DependsOn.Decode(&deps); err != nil || deps["postgres"].Condition != "service_healthy" {
		t.Errorf("hookline: depends_on %v (%v), want postgres: service_healthy", deps, err)
	}
	if pg := c.Services["postgres"]; pg.Healthcheck == nil || !strings.HasPrefix(pg.Image, "postgres:") {
		t.Errorf("postgres: image %q healthcheck %+v, want a PostgreSQL image with a health check", pg.Image, pg.Healthcheck)
	} else if v, err := strconv.Atoi(strings.TrimPrefix(pg.Image, "postgres:")); err != nil || v < 15 {
		t.Errorf("postgres: image %q, want PostgreSQL 15 or later", pg.Image)
	}
}

// composeMounts checks every service's mounts (bind-mounted files exist, named volumes are declared, the
// monitoring services are in the monitoring profile) and returns, per service, the file in deploy/ mounted
// at each container path.
func composeMounts(t *testing.T, c compose) map[string]map[string]string {
	t.Helper()
	inContainer := map[string]map[string]string{} // service -> container path -> file in deploy/
	for name, s := range c.Services {
		binds, named := mounts(s.Volumes)
		inContainer[name] = map[string]string{}
		for host, target := range binds {
			if _, err := os.Stat(host); err != nil {
				t.Errorf("%s mounts %s: %v", name, host, err)
			}
			inContainer[name][target] = host
		}
		for _, v := range named {
			if _, ok := c.Volumes[v]; !ok {
				t.Errorf("%s uses the volume %s, which compose.yaml does not declare", name, v)
			}
		}
		if (name == "prometheus" || name == "grafana") && !slices.Equal(s.Profiles, []string{"monitoring"}) {
			t.Errorf("%s: profiles %v, want [monitoring]", name, s.Profiles)
		}
	}
	return inContainer
}

// checkPrometheusMounts: Prometheus gets the shipped rules and a configuration that loads them and scrapes
// the hookline service as the job the rules name.
func checkPrometheusMounts(t *testing.T, inContainer map[string]map[string]string) {
	t.Helper()
	if inContainer["prometheus"]["/etc/prometheus/alerts.yml"] != "./"+alertsFile {
		t.Errorf("prometheus does not mount %s", alertsFile)
	}
	var prom struct {
		Global        map[string]string `yaml:"global"`
		RuleFiles     []string          `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	promFile := inContainer["prometheus"]["/etc/prometheus/prometheus.yml"]
	if b, err := os.ReadFile(promFile); err != nil {
		t.Errorf("prometheus configuration: %v", err)
	} else if err := strictYAML(b, &prom); err != nil {
		t.Errorf("%s: %v", promFile, err)
	}
	for _, rf := range prom.RuleFiles {
		if _, ok := inContainer["prometheus"][rf]; !ok {
			t.Errorf("%s loads %s, which is not mounted", promFile, rf)
		}
	}
	if len(prom.ScrapeConfigs) != 1 || prom.ScrapeConfigs[0].JobName != "hookline" || len(prom.ScrapeConfigs[0].StaticConfigs) != 1 ||
		!slices.Equal(prom.ScrapeConfigs[0].StaticConfigs[0].Targets, []string{"hookline:8080"}) {
		t.Errorf("%s scrapes %+v, want job hookline at hookline:8080 (the job the rules name)", promFile, prom.ScrapeConfigs)
	}
}

// checkGrafanaMounts: Grafana gets the dashboard where its provisioned provider reads, and the prometheus
// service as its default data source.
func checkGrafanaMounts(t *testing.T, inContainer map[string]map[string]string) {
	t.Helper()
	if inContainer["grafana"]["/var/lib/grafana/dashboards/hookline.json"] != "./"+dashboardFile {
		t.Errorf("grafana does not mount %s", dashboardFile)
	}
	var provider struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name            string `yaml:"name"`
			Folder          string `yaml:"folder"`
			Type            string `yaml:"type"`
			DisableDeletion bool   `yaml:"disableDeletion"`
			AllowUIUpdates  bool   `yaml:"allowUiUpdates"`
			Options         struct {
				Path                      string `yaml:"path"`
				FoldersFromFilesStructure bool   `yaml:"foldersFromFilesStructure"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	var datasources struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, Type, UID, Access, URL string
			IsDefault                    bool `yaml:"isDefault"`
			Editable                     bool `yaml:"editable"`
		} `yaml:"datasources"`
	}
	provisioning := func(dir string, into any) {
		host := inContainer["grafana"][dir]
		entries, err := os.ReadDir(host)
		if err != nil || len(entries) != 1 {
			t.Fatalf("grafana mounts %s from %q: %v (%d files, want 1)", dir, host, err, len(entries))
		}
		b, err := os.ReadFile(filepath.Join(host, entries[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := strictYAML(b, into); err != nil && !errors.Is(err, io.EOF) {
			t.Errorf("%s: %v", entries[0].Name(), err)
		}
	}
	provisioning("/etc/grafana/provisioning/dashboards", &provider)
	provisioning("/etc/grafana/provisioning/datasources", &datasources)
	if len(provider.Providers) != 1 || provider.Providers[0].Options.Path != path.Dir("/var/lib/grafana/dashboards/hookline.json") {
		t.Errorf("the dashboard provider reads %+v, not where hookline.json is mounted", provider.Providers)
	}
	if len(datasources.Datasources) != 1 || datasources.Datasources[0].Type != "prometheus" ||
		datasources.Datasources[0].URL != "http://prometheus:9090" || !datasources.Datasources[0].IsDefault {
		t.Errorf("data sources %+v, want the prometheus service as the default", datasources.Datasources)
	}
}
