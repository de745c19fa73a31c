package tenants

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/fault"
)

// lockedBuffer is a log sink safe for the listener's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A token revoked through one process is refused by every other process as soon as the revocation returns,
// though each had it cached: the revocation waits for every listening process to drop it, and here both
// acknowledge (no process is waited out).
func TestRevokedEverywhereAtOnce(t *testing.T) {
	// Not parallel: a revocation waits for every listening process of the database, and it checks that
	// none was waited out; no other test's listener may come and go meanwhile.
	ctx := activity.System(t.Context(), "test setup")
	var logs lockedBuffer
	processes := make([]*Service, 2)
	for i := range processes {
		s, _ := newService(t, "")
		s.Log = slog.New(slog.NewTextHandler(&logs, nil))
		s.StartListening(ctx)
		t.Cleanup(s.StopListening)
		if !s.listener.live() {
			t.Fatalf("process %d: the listener did not connect", i)
		}
		processes[i] = s
	}
	a, b := processes[0], processes[1]
	tn, err := a.CreateTenant(ctx, "revocation")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.CreateToken(ctx, tn.ID, "publisher", []string{ScopeEventsWrite})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range processes {
		if _, err := s.Authenticate(ctx, tok.Token); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := b.known.get(string(hashToken(tok.Token)), b.Now(), b.listener.live()); !ok {
		t.Fatal("the other process did not cache the token")
	}
	if err := a.RevokeToken(ctx, tn.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	for i, s := range processes {
		if _, err := s.Authenticate(ctx, tok.Token); !fault.Is(err, fault.Unauthenticated) {
			t.Errorf("process %d right after the revocation returned: %v, want UNAUTHENTICATED", i, err)
		}
	}
	if l := logs.String(); l != "" {
		t.Errorf("the revocation waited a process out: %s", l)
	}
}
