package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// apiPoll pulls up to limit deliveries through the API as consumer, polling again while fewer are ready
// (a transaction still open anywhere on the shared database holds polls back), and returns their ids and
// the cursor to commit.
func apiPoll(t *testing.T, e *env, token, path, consumer string, want int) ([]string, string) {
	t.Helper()
	var page struct {
		Data []struct {
			DeliveryID string `json:"delivery_id"`
			EventType  string `json:"event_type"`
		} `json:"data"`
		Cursor string `json:"cursor"`
	}
	eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
		status, body := apiCall(t, e, token, http.MethodGet, fmt.Sprintf("%s/poll?consumer=%s&limit=%d", path, consumer, want), nil)
		if status != http.StatusOK {
			t.Fatalf("poll: %d %s", status, body)
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		return len(page.Data) == want
	}, func() string { return fmt.Sprintf("%s pulled %d of %d", consumer, len(page.Data), want) })
	ids := make([]string, 0, len(page.Data))
	for _, d := range page.Data {
		ids = append(ids, d.DeliveryID)
	}
	return ids, page.Cursor
}

func apiCall(t *testing.T, e *env, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, e.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// A customer adds a polling subscription in the form (with script the URL and sending sections go away
// once "I pull" is chosen), events are published, a consumer pulls two through the API and commits them;
// the endpoint page shows the consumer's cursor in words and its lag; a committed delivery names its
// consumer, a pending one waits to be pulled. At 390 px nothing scrolls sideways; axe finds nothing.
func TestBrowserPollingStory(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("polling story")
	tok, err := e.srv.Tenants.CreateToken(setupCtx(), tn.ID, "warehouse consumer", []string{"deliveries:read", "deliveries:write"})
	if err != nil {
		t.Fatal(err)
	}

	b.login(e.base, tn.Email)
	b.run("add endpoint",
		chromedp.Click(chromedp.CSS(`[data-testid=add-endpoint]`)),
		chromedp.WaitVisible(chromedp.CSS(`#endpoint-url`)),
	)
	if eval[bool](b, `!!document.querySelector('[data-push-only-note]').offsetParent`) {
		t.Error("with script the push-only notes still show")
	}
	b.run("choose polling",
		chromedp.Click(chromedp.CSS(`#type-polling`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#endpoint-url`)),
	)
	hidden := eval[map[string]bool](b, `Object.fromEntries(['#endpoint-url', '#endpoint-rate', '#auth-none', '#schedule-standard', '#filter-json', '#endpoint-description']
		.map(s => [s, document.querySelector(s)?.offsetParent === null]))`)
	for sel, h := range hidden {
		if want := sel != "#filter-json" && sel != "#endpoint-description"; h != want {
			t.Errorf("with polling chosen %s hidden=%v, want %v", sel, h, want)
		}
	}
	b.run("describe it", chromedp.SendKeys(chromedp.CSS(`#endpoint-description`), "Warehouse sync"))
	b.axeCheck("endpoint form, polling chosen")
	b.screenshot("form-polling")
	b.run("save", chromedp.Click(chromedp.CSS(`[data-testid=save-endpoint]`)))
	b.waitJS("saved", `/^\/subscriptions\/[0-9a-f-]{36}$/.test(location.pathname) && document.querySelector('[data-testid=polling-card]')`)
	subID := uuid.MustParse(strings.TrimPrefix(eval[string](b, `location.pathname`), "/subscriptions/"))
	if got := b.text(`[data-testid=no-consumers]`); !strings.HasPrefix(got, "No consumer has polled yet") {
		t.Errorf("empty state %q", got)
	}
	if eval[bool](b, `!!document.querySelector('[data-testid=send-test], [data-testid=url], [data-testid=delivery-settings]')`) {
		t.Error("the polling subscription's page offers Send test event, a URL or the sending settings")
	}

	var ids []uuid.UUID
	for i := range 3 {
		ids = append(ids, e.publishTo(tn, subID, "order.created", map[string]any{"order": i}))
	}
	path := "/api/v1/tenants/" + tn.ID.String() + "/subscriptions/" + subID.String()
	pulled, cursor := apiPoll(t, e, tok.Token, path, "warehouse", 2)
	if pulled[0] != ids[0].String() || pulled[1] != ids[1].String() {
		t.Fatalf("pulled %v, want the first two of %v", pulled, ids)
	}
	if status, body := apiCall(t, e, tok.Token, http.MethodPost, path+"/consumers/warehouse/commit", map[string]string{"cursor": cursor}); status != http.StatusNoContent {
		t.Fatalf("commit: %d %s", status, body)
	}

	b.run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid=consumers]`)))
	row := `[data-testid=consumer][data-name=warehouse]`
	if got := b.text(row + ` [data-testid=consumer-cursor]`); !strings.HasPrefix(got, "after the delivery of order.created created") {
		t.Errorf("the cursor says %q", got)
	}
	if got := b.text(row + ` [data-testid=consumer-lag]`); got != "1 delivery after its cursor" {
		t.Errorf("the lag says %q", got)
	}
	if got := b.text(row + ` [data-testid=consumer-committed]`); got == "never" {
		t.Errorf("last commit %q", got)
	}
	b.axeCheck("polling endpoint page")
	b.screenshot("endpoint-page")

	// The committed delivery, opened from the list; then the one still waiting.
	b.run("open the committed delivery",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-testid=delivery-row][data-id=%q] a[href^="/deliveries/"]`, ids[0].String()))),
	)
	b.waitJS("committed", `document.querySelector('[data-testid=summary-headline]')?.textContent.trim() === 'Committed by consumer warehouse'`)
	if got := b.text(`[data-testid=request-heading]`); got != "Pulled, not sent" {
		t.Errorf("request heading %q", got)
	}
	b.axeCheck("committed polling delivery")
	b.screenshot("delivery-committed")
	b.run("open the waiting delivery", chromedp.Navigate(e.base+"/deliveries/"+ids[2].String()), chromedp.WaitReady(chromedp.CSS(`footer`)))
	if got := b.text(`[data-testid=summary-headline]`); got != "Waiting to be pulled" {
		t.Errorf("pending headline %q", got)
	}
	if eval[bool](b, `!!document.querySelector('[data-testid=retry-now], [data-testid=next-attempt], [data-testid=request-url]')`) {
		t.Error("the waiting delivery offers Retry now, a next attempt or a request URL")
	}
	b.axeCheck("pending polling delivery")
	b.screenshot("delivery-pending")

	// 390 px wide: nothing scrolls sideways.
	b.run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	for _, p := range []struct{ name, path string }{
		{"new form", "/subscriptions/new"},
		{"edit form", "/subscriptions/" + subID.String() + "/edit"},
		{"endpoint page", "/subscriptions/" + subID.String()},
		{"committed delivery", "/deliveries/" + ids[0].String()},
		{"pending delivery", "/deliveries/" + ids[2].String()},
	} {
		b.run("open "+p.name, chromedp.Navigate(e.base+p.path), chromedp.WaitReady(chromedp.CSS(`footer`)))
		if p.name == "new form" {
			b.run("choose polling", chromedp.Click(chromedp.CSS(`#type-polling`)), chromedp.WaitNotVisible(chromedp.CSS(`#endpoint-url`)))
		}
		if overflow := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); overflow > 1 {
			t.Errorf("the %s at 390 px is %d px wider than the screen", p.name, overflow)
		}
		b.axeCheck("phone " + p.name)
		b.screenshot("phone-" + strings.ReplaceAll(p.name, " ", "-"))
	}
}
