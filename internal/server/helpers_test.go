package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testdb"
)

// eventually polls cond every 20 ms until it holds, failing the test with what after timeout.
func eventually(t testing.TB, timeout time.Duration, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
		<-tick.C
	}
}

// ownDatabase is a database of the test's own, dropped when it ends: for a test whose server's background
// services must be the only ones on its rows (its worker's attempts, its replay runner's chunks, its
// gauges), so that it can run in parallel with the others.
func ownDatabase(t testing.TB) string {
	t.Helper()
	url, drop, err := testdb.Create(context.Background(), "server_own")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return url
}
