package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hookline/hookline/client"
)

// listen pulls the tenant's events from a polling subscription of its own and forwards each to a local URL
// as the webhook Hookline would have sent, signed with the subscription's secret. Delivery is at least
// once: a page of deliveries is committed only when the local server has answered every one of them (any
// HTTP status: the answer is printed, as a webhook endpoint's would be recorded); while it cannot be
// reached (refused, reset, no answer within listenForwardTimeout) the same delivery is tried again with a
// backoff and nothing is committed. Stopped, killed or cut off from the API, the listener starts again
// from the committed cursor: the deliveries of an uncommitted page are forwarded again (the receiver
// dedupes by webhook-id, the event id), and nothing published meanwhile is lost.
const (
	// listenPage is how many deliveries a poll asks for: at most that many are forwarded again after a kill.
	listenPage = 20
	// listenForwardTimeout bounds one forward; a local server that takes longer has not answered.
	listenForwardTimeout = 30 * time.Second
	// The backoff between tries while the local server or the API cannot be reached.
	listenMinBackoff = 500 * time.Millisecond
	listenMaxBackoff = 15 * time.Second
	// listenCommitTimeout bounds a commit made while stopping: the page was forwarded, so it is worth one try.
	listenCommitTimeout = 10 * time.Second
	// listenDescription marks the polling subscription of a listener (by name), found again at the next start.
	listenDescription = "hookline listen: "
	// defaultListenInterval is how long listen waits before polling again when nothing is ready.
	defaultListenInterval = time.Second
)

// listenerName is the API's consumer name syntax, which a listener's name is.
var listenerName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// defaultListenerName is this machine's host name made a consumer name: characters other than letters,
// digits, '.', '_' and '-' become '-', without '-' at either end, at most 64 of them ("listener" when
// nothing is left).
func defaultListenerName(hostname string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, hostname)
	name = strings.Trim(name, "-")
	if len(name) > 64 {
		name = strings.TrimRight(name[:64], "-")
	}
	if name == "" {
		return "listener"
	}
	return name
}

// eventFilters splits --events into the subscription's event_types (empty: every type).
func eventFilters(s string) []string {
	out := []string{}
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// listener is one run of `hookline listen`.
type listener struct {
	in      *invocation
	c       *client.Client
	tenant  string
	name    string
	target  string
	sub     string
	secrets []string // newest first, as the server signs
	http    *http.Client
}

func runListen(ctx context.Context, in *invocation) error {
	if err := in.wantArgs(); err != nil {
		return err
	}
	if in.o.forwardTo == "" {
		return usagef(in.cmd, "--forward-to is missing: the local URL to POST each event to, e.g. http://localhost:3000/webhooks")
	}
	u, err := url.Parse(in.o.forwardTo)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef(in.cmd, "--forward-to %q is not an http or https URL such as http://localhost:3000/webhooks", in.o.forwardTo)
	}
	name := in.o.name
	if name == "" {
		host, _ := os.Hostname()
		name = defaultListenerName(host)
	}
	if !listenerName.MatchString(name) {
		return usagef(in.cmd, "--name %q is not 1 to 64 letters, digits, '.', '_' or '-'", name)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, tenant, err := in.tenant(ctx)
	if err != nil {
		return quiet(ctx, err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	l := &listener{in: in, c: c, tenant: tenant, name: name, target: u.String(), http: &http.Client{
		Transport: transport,
		Timeout:   listenForwardTimeout,
		// A webhook sender does not follow redirects; the local server's 3xx is its answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if err := l.subscribe(ctx, eventFilters(in.o.events)); err != nil {
		return quiet(ctx, err)
	}
	return l.run(ctx)
}

// subscribe finds the listener's polling subscription (by its description) or creates it, sets its event
// types to filters, reads its signing secrets and prints the newest.
func (l *listener) subscribe(ctx context.Context, filters []string) error {
	description := listenDescription + l.name
	var found *client.Subscription
	for s, err := range l.c.Subscriptions(ctx, l.tenant) {
		if err != nil {
			return err
		}
		if s.Type == client.SubscriptionTypePolling && s.Description == description {
			found = &s
			break
		}
	}
	what := "every event type"
	if len(filters) > 0 {
		what = strings.Join(filters, ", ")
	}
	stderr := l.in.stderr
	if found == nil {
		typ := client.SubscriptionTypePolling
		res, err := l.c.CreateSubscriptionWithResponse(ctx, l.tenant, nil, client.CreateSubscriptionJSONRequestBody{
			Type: &typ, Description: &description, EventTypes: &filters,
		})
		if err != nil {
			return err
		}
		created, err := answer(res, res.JSON201)
		if err != nil {
			return err
		}
		l.sub, l.secrets = created.ID, []string{created.Secret}
		fmt.Fprintf(stderr, "created the polling subscription %s for listener %s (%s)\n", l.sub, l.name, what)
	} else {
		l.sub = found.ID
		switch found.State {
		case client.SubscriptionStatePaused:
			// Someone paused it on purpose (the dashboard, the API): theirs to undo, not listen's.
			return fmt.Errorf("the polling subscription %s of listener %s is paused: resume it (the dashboard's Resume, or POST .../subscriptions/%s/resume) to listen", l.sub, l.name, l.sub)
		case client.SubscriptionStateDisabled:
			// Disabled by the server, most likely for being pulled by nobody while the listener was away
			// (the incident rules): starting the listener is what resuming it is for.
			res, err := l.c.ResumeSubscriptionWithResponse(ctx, l.tenant, l.sub, nil)
			if err != nil {
				return err
			}
			if _, err := answer(res, res.JSON200); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "resumed the polling subscription %s, which the server had disabled: %s\n", l.sub, found.DisabledReason)
		}
		if !sameFilters(found.EventTypes, filters) {
			res, err := l.c.UpdateSubscriptionWithResponse(ctx, l.tenant, l.sub, nil, client.UpdateSubscriptionJSONRequestBody{EventTypes: &filters})
			if err != nil {
				return err
			}
			if _, err := answer(res, res.JSON200); err != nil {
				return err
			}
		}
		res, err := l.c.SubscriptionSecretsWithResponse(ctx, l.tenant, l.sub, nil)
		if err != nil {
			return err
		}
		secrets, err := answer(res, res.JSON200)
		if err != nil {
			return err
		}
		for _, s := range secrets.Secrets {
			l.secrets = append(l.secrets, s.Secret)
		}
		if len(l.secrets) == 0 {
			return errors.New("the subscription has no signing secret")
		}
		fmt.Fprintf(stderr, "using the polling subscription %s of listener %s (%s), from its committed cursor\n", l.sub, l.name, what)
	}
	fmt.Fprintf(stderr, "signing secret: %s (verify the forwarded requests with it, as in production)\n", l.secrets[0])
	fmt.Fprintf(stderr, "forwarding to %s (Ctrl-C to stop)\n", l.target)
	return nil
}

// answer is a generated response's decoded success, or an error when the server answered another.
func answer[T any](res interface{ StatusCode() int }, body *T) (*T, error) {
	if body == nil {
		return nil, fmt.Errorf("unexpected answer %d from the server", res.StatusCode())
	}
	return body, nil
}

// sameFilters says whether the subscription's event types are the listener's, in any order.
func sameFilters(have, want []string) bool {
	a, b := slices.Clone(have), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// run polls, forwards and commits until ctx ends (Ctrl-C: nil) or the API refuses a request.
func (l *listener) run(ctx context.Context) error {
	api := &retrier{stderr: l.in.stderr, what: "the API"}
	for {
		page, err := l.c.Poll(ctx, l.tenant, l.sub, l.name, listenPage)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if !transient(err) {
				return err
			}
			if !api.wait(ctx, err, "polling again from the committed cursor") {
				return nil
			}
			continue
		}
		api.ok()
		for _, d := range page.Data {
			answered, err := l.forward(ctx, d)
			if err != nil {
				return err
			}
			if !answered {
				// Stopped before the local server answered: nothing of this page is committed, so all of
				// it is forwarded again at the next start.
				return nil
			}
		}
		if len(page.Data) > 0 {
			if err := l.commit(ctx, api, page.Cursor); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		if !page.Done && len(page.Data) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(l.in.o.interval.d):
		}
	}
}

// commit commits the cursor of a forwarded page, trying again while the API cannot be reached. Stopping
// (ctx done) gets one more try, bounded, since the page was forwarded: not committing it means
// forwarding it again at the next start.
func (l *listener) commit(ctx context.Context, api *retrier, cursor string) error {
	for {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenCommitTimeout)
		err := l.c.Commit(cctx, l.tenant, l.sub, l.name, cursor)
		cancel()
		if err == nil {
			api.ok()
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if !transient(err) {
			return err
		}
		if !api.wait(ctx, err, "committing again") {
			return nil
		}
	}
}

// forward POSTs one delivery to the local URL until the local server answers, and prints the answer. It
// returns false when ctx ended first.
func (l *listener) forward(ctx context.Context, d client.PulledDelivery) (bool, error) {
	body, err := d.Body()
	if err != nil {
		// The server's payloads are JSON: forwarding something else, or skipping it, would be worse.
		return false, fmt.Errorf("delivery %s: %w", d.DeliveryID, err)
	}
	local := &retrier{stderr: l.in.stderr, what: "your server at " + l.target}
	for {
		start := time.Now()
		status, err := l.post(ctx, d.EventID, body, start)
		took := time.Since(start)
		if err == nil {
			local.ok()
			l.print(start, d, status, took)
			return true, nil
		}
		if ctx.Err() != nil {
			return false, nil
		}
		if !local.wait(ctx, fmt.Errorf("delivery %s not forwarded: %w", d.DeliveryID, err), "trying it again; nothing is committed until it answers") {
			return false, nil
		}
	}
}

// post makes one request: the webhook as Hookline sends it, signed now.
func (l *listener) post(ctx context.Context, eventID string, body []byte, at time.Time) (int, error) {
	signed, err := client.SignWith(l.secrets, eventID, at, body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = signed
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", client.UserAgent)
	res, err := l.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the method and URL are said once, by the retrier
		}
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, nil
}

// listenLine is a forwarded delivery as --json prints it.
type listenLine struct {
	Time       time.Time `json:"time"`
	DeliveryID string    `json:"delivery_id"`
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	Status     int       `json:"status"`
	DurationMS int64     `json:"duration_ms"`
}

func (l *listener) print(at time.Time, d client.PulledDelivery, status int, took time.Duration) {
	if l.in.g.json {
		_ = printJSON(l.in.stdout, listenLine{Time: at.UTC(), DeliveryID: d.DeliveryID, EventID: d.EventID,
			EventType: d.EventType, Status: status, DurationMS: took.Milliseconds()})
		return
	}
	fmt.Fprintf(l.in.stdout, "%s  %s  %s  HTTP %d  %s\n", stamp(at), d.EventType, d.DeliveryID, status, milliseconds(took))
}

// milliseconds is d in milliseconds, to a tenth below 10 ms (a local server often answers in less than one).
func milliseconds(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// retrier waits, with a growing backoff, between tries of something that cannot be reached, saying so once
// per outage and again when it is back.
type retrier struct {
	stderr  io.Writer
	what    string
	backoff time.Duration
	failing bool
}

// wait reports err (the first time of an outage) and waits the backoff; false when ctx ended first.
func (r *retrier) wait(ctx context.Context, err error, then string) bool {
	var ae *client.APIError
	switch {
	case errors.As(err, &ae) && ae.RetryAfter > 0:
		r.backoff = ae.RetryAfter
	case r.backoff == 0:
		r.backoff = listenMinBackoff
	default:
		r.backoff = min(2*r.backoff, listenMaxBackoff)
	}
	if !r.failing {
		fmt.Fprintf(r.stderr, "hookline listen: %s: %s; %s (backing off to every %s)\n",
			r.what, strings.TrimPrefix(err.Error(), "client: "), then, listenMaxBackoff)
		r.failing = true
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(r.backoff):
		return true
	}
}

// ok ends an outage.
func (r *retrier) ok() {
	if r.failing {
		fmt.Fprintf(r.stderr, "hookline listen: %s answers again\n", r.what)
	}
	r.failing, r.backoff = false, 0
}
