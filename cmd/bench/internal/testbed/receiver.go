package testbed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Receiver is the loopback endpoint every subscription points at: /hook/<delay ms>/<label>. It answers
// 200 at once or after the delay, and counts every request by webhook-id and label (one delivery), so a
// run can say how many deliveries arrived and which arrived twice after a 2xx.
type Receiver struct {
	srv  *http.Server
	base string

	mu       sync.Mutex
	seen     map[string]int       // delivery key -> requests
	arrived  map[string]time.Time // delivery key -> first arrival (when tracking)
	track    bool
	total    int
	dupKeys  []string
	target   int
	reached  chan struct{}
	bodyErrs int
	waiters  map[string]chan time.Time // delivery key -> told its first arrival
}

// StartReceiver starts the receiver on a free loopback port; Close stops it.
func StartReceiver() (*Receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &Receiver{base: "http://" + l.Addr().String(), seen: map[string]int{}, arrived: map[string]time.Time{}}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go rc.srv.Serve(l)
	return rc, nil
}

// Close shuts the receiver down.
func (rc *Receiver) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = rc.srv.Shutdown(ctx)
}

// URL for a subscription labelled label whose receiver answers after delay.
func (rc *Receiver) URL(delay time.Duration, label string) string {
	return fmt.Sprintf("%s/hook/%d/%s", rc.base, delay.Milliseconds(), label)
}

// ServeHTTP counts one delivery.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	_, err := io.Copy(io.Discard, r.Body)
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/hook/"), "/")
	if len(parts) != 2 {
		http.NotFound(w, r)
		return
	}
	delayMS, _ := strconv.Atoi(parts[0])
	key := r.Header.Get("webhook-id") + "/" + parts[1]
	rc.mu.Lock()
	if err != nil {
		rc.bodyErrs++
	}
	rc.total++
	n := rc.seen[key] + 1
	rc.seen[key] = n
	if n == 2 {
		rc.dupKeys = append(rc.dupKeys, key)
	}
	if n == 1 && rc.track {
		rc.arrived[key] = now
	}
	if ch, ok := rc.waiters[key]; ok && n == 1 {
		ch <- now
		delete(rc.waiters, key)
	}
	if n == 1 && rc.target > 0 && len(rc.seen) == rc.target && rc.reached != nil {
		close(rc.reached)
		rc.reached = nil
	}
	rc.mu.Unlock()
	if delayMS > 0 {
		time.Sleep(time.Duration(delayMS) * time.Millisecond)
	}
	w.WriteHeader(http.StatusOK)
}

// Reset forgets everything; after it, the returned channel closes once target distinct deliveries
// arrived (never when target is 0). track keeps each delivery's first arrival time.
func (rc *Receiver) Reset(target int, track bool) <-chan struct{} {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.seen = map[string]int{}
	rc.arrived = map[string]time.Time{}
	rc.track = track
	rc.total, rc.bodyErrs, rc.dupKeys, rc.target = 0, 0, nil, target
	rc.waiters = map[string]chan time.Time{}
	ch := make(chan struct{})
	rc.reached = ch
	return ch
}

// Await returns a channel told the first arrival of the delivery key (at once if it arrived already,
// when tracking).
func (rc *Receiver) Await(key string) <-chan time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ch := make(chan time.Time, 1)
	if t, ok := rc.arrived[key]; ok {
		ch <- t
		return ch
	}
	if rc.waiters == nil {
		rc.waiters = map[string]chan time.Time{}
	}
	rc.waiters[key] = ch
	return ch
}

// Counts returns distinct deliveries, all requests, and the keys received more than once.
func (rc *Receiver) Counts() (unique, total int, dups []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen), rc.total, append([]string(nil), rc.dupKeys...)
}

// Arrival returns the first arrival of a delivery.
func (rc *Receiver) Arrival(key string) (time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	t, ok := rc.arrived[key]
	return t, ok
}

// Tally is the lost/duplicate count of a phase: expected deliveries against what the receiver got.
type Tally struct {
	Expected, Unique, Total int
	Dups                    []string
	Stored                  bool // counted in SQL (ingest): "stored" rather than "delivered"
}

// Lost are the expected deliveries that did not arrive; Duplicates the arrivals beyond the first of each.
func (t Tally) Lost() int       { return max(t.Expected-t.Unique, 0) }
func (t Tally) Duplicates() int { return t.Total - t.Unique }

// String is the tally as the phases print it.
func (t Tally) String() string {
	verb := "delivered"
	if t.Stored {
		verb = "stored"
	}
	s := fmt.Sprintf("accepted %d, %s %d, lost %d, duplicates %d", t.Expected, verb, t.Unique, t.Lost(), t.Duplicates())
	if len(t.Dups) > 0 {
		shown := t.Dups[:min(len(t.Dups), 10)]
		s += " (twice: " + strings.Join(shown, ", ")
		if len(t.Dups) > len(shown) {
			s += fmt.Sprintf(", … %d more", len(t.Dups)-len(shown))
		}
		s += ")"
	}
	return s
}

// Tally counts the deliveries the receiver got against expected.
func (rc *Receiver) Tally(expected int) Tally {
	u, t, d := rc.Counts()
	return Tally{Expected: expected, Unique: u, Total: t, Dups: d}
}

// PostDelivery POSTs body to url as a delivery with webhook-id id, and wants a 200: what the ceiling's
// loop sends the receiver for each row it claimed.
func PostDelivery(ctx context.Context, hc *http.Client, url, id string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("receiver answered %d", resp.StatusCode)
	}
	return nil
}
