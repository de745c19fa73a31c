package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "cmdserver", func(u string) { dbURL = u }) }

// buildServer compiles the real binary once per test.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "server")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestHelpListsFlags(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(buildServer(t), "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("server -h: %v\n%s", err, out)
	}
	for _, want := range []string{"-retry-base", "HOOKLINE_RETRY_BASE", "-database-url", "migrate"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("server -h does not mention %s:\n%s", want, out)
		}
	}
}

// Several instances migrating one database at once must all succeed: the advisory lock serialises them.
func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	fresh, drop, err := testdb.CreateEmpty(t.Context(), "migrate_race")
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	outs := make([][]byte, 4)
	for i := range errs {
		wg.Go(func() {
			cmd := exec.Command(bin, "migrate")
			cmd.Env = append(os.Environ(), "DATABASE_URL="+fresh)
			outs[i], errs[i] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: %v\n%s", i, err, outs[i])
		}
	}
}

// SIGTERM while an attempt is in flight: the attempt finishes, the delivery is recorded, exit code 0.
func TestSIGTERMFinishesInFlightAndExitsZero(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	// A database of its own: no other test's server claims its delivery.
	own, drop, err := testdb.Create(t.Context(), "cmd_sigterm")
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release // still running when SIGTERM comes: released once the server is shutting down
		w.WriteHeader(200)
	}))
	defer receiver.Close()

	p := startProcess(t, bin, "DATABASE_URL="+own, "HOOKLINE_ADMIN_TOKEN=t0ken",
		"HOOKLINE_ALLOW_PRIVATE_NETWORKS=true", "HOOKLINE_ATTEMPT_TIMEOUT=5s")
	waitReady(t, p.base)
	tenant := call(t, p.base, "POST", "/api/v1/tenants", `{"name":"sigterm"}`)["id"].(string)
	call(t, p.base, "POST", "/api/v1/tenants/"+tenant+"/subscriptions", fmt.Sprintf(`{"url":%q}`, receiver.URL))
	ev := call(t, p.base, "POST", "/api/v1/tenants/"+tenant+"/events", `{"event_type":"a.b","payload":{}}`)
	did := ev["deliveries"].([]any)[0].(map[string]any)["id"].(string)

	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatalf("the attempt never reached the receiver\n%s", p.logs)
	}
	go func() {
		defer close(release)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); <-tick.C {
			if strings.Contains(p.logs.String(), "shutting down") {
				return
			}
		}
	}()
	p.sigterm(t, 20*time.Second)
	if state := queryState(t, own, tenant, did); state != "delivered" {
		t.Fatalf("in-flight delivery after shutdown is %q, want delivered\n%s", state, p.logs)
	}
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	eventually(t, 30*time.Second, func() string { return "server never became ready" }, func() bool {
		r, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == 200
	})
}

func call(t *testing.T, base, method, path, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer t0ken")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, b)
	}
	return out
}

func queryState(t *testing.T, url, tenantID, deliveryID string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	d, err := db.New(conn).GetDelivery(context.Background(), db.GetDeliveryParams{
		ID: uuid.MustParse(deliveryID), TenantID: uuid.MustParse(tenantID),
	})
	if err != nil {
		t.Fatal(err)
	}
	return d.State
}
