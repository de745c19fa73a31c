package web_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// verifyStandardWebhook is a receiver's check written from the Standard Webhooks spec, independently of
// delivery.Sign (the same check as internal/delivery's worker tests; test helpers cannot be shared across
// packages): the key is the base64 after "whsec_"; the signed content "webhook-id.webhook-timestamp.body";
// webhook-signature holds space-separated "v1,<base64 HMAC-SHA256>" values, any one of which may match.
func verifyStandardWebhook(secret string, h http.Header, body []byte) error {
	raw, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return errors.New("secret lacks whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return err
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	if id == "" || ts == "" {
		return errors.New("webhook-id or webhook-timestamp missing")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		version, value, _ := strings.Cut(sig, ",")
		if version != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(value); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no v1 signature in %q matches", h.Get("webhook-signature"))
}

// A customer adds an endpoint in the browser (a refused URL first, shown beside the field), chooses its
// events and a custom header, reveals its signing secret, rotates it, and receives a delivery that both
// the old and the new secret verify (Standard Webhooks); then deletes the endpoint. The pages only POSTs
// reach (the refused form, the secret pages) pass the axe-core checks too.
func TestBrowserEndpointSelfService(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	tn := e.newTenant("browser self-service")
	// Event types the tenant already receives: offered as choices.
	known := e.newSubscription(tn, "/selfservice/known", "Known types", "order.paid", "order.refunded")
	e.publishTo(tn, known.ID, "customer.created", map[string]any{"n": 0})
	path := "/selfservice/" + uuid.NewString()[:8]

	b.login(e.base, tn.Email)
	b.run("add endpoint",
		chromedp.Click(chromedp.CSS(`[data-testid=add-endpoint]`)),
		chromedp.WaitVisible(chromedp.CSS(`#endpoint-url`)),
	)
	groups := eval[[]string](b, `[...document.querySelectorAll('[data-testid=event-group]')].map(g => g.dataset.group)`)
	// The event catalogue is global and other tests of this package register types in it: its groups may
	// show too; the tenant's own types must be in theirs.
	if !slices.Contains(groups, "customer") || !slices.Contains(groups, "order") {
		t.Errorf("event type groups %v, want customer and order among them", groups)
	}
	b.run("a refused URL",
		chromedp.SendKeys(chromedp.CSS(`#endpoint-url`), "ftp://example.com/hook"),
		chromedp.Click(chromedp.CSS(`[data-testid=save-endpoint]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=endpoint-url-error]`)),
	)
	if msg := b.text(`[data-testid=endpoint-url-error]`); !strings.Contains(msg, "https://") {
		t.Errorf("beside the URL: %q", msg)
	}
	b.axeCheck("refused endpoint form")
	b.screenshot("refused-form")
	b.run("fill the form",
		chromedp.SetValue(chromedp.CSS(`#endpoint-url`), e.recv.URL+path),
		chromedp.SendKeys(chromedp.CSS(`#endpoint-description`), "Orders paid"),
		chromedp.Click(chromedp.CSS(`#event-all`)), // uncheck All events
		chromedp.Click(chromedp.CSS(`input[name=event_types][value="order.paid"]`)),
		chromedp.SendKeys(chromedp.CSS(`#header-name-0`), "X-Api-Key"),
		chromedp.SendKeys(chromedp.CSS(`#header-value-0`), "browser-key"),
		chromedp.Click(chromedp.CSS(`[data-testid=save-endpoint]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=reveal-secret]`)),
	)
	if got := b.text(`[data-testid=flash]`); !strings.HasPrefix(got, "Endpoint added.") {
		t.Errorf("flash %q", got)
	}
	loc := eval[string](b, `location.pathname`)
	id, err := uuid.Parse(strings.TrimPrefix(loc, "/subscriptions/"))
	if err != nil {
		t.Fatalf("after adding: at %s", loc)
	}
	sub, err := e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if err != nil || strings.Join(sub.EventTypes, ",") != "order.paid" || strings.Join(sub.HeaderNames, ",") != "X-Api-Key" {
		t.Fatalf("added %+v %v", sub, err)
	}

	old, fresh := revealAndRotate(t, b, loc)

	checkBothSecretsSign(t, e, tn, path, old, fresh)

	checkDeleteEndpoint(t, b, e, tn, id)
}

// revealAndRotate reveals the endpoint's signing secret on its page (loc), then rotates it: the page shows
// only the new one and says until when the old one keeps signing.
func revealAndRotate(t *testing.T, b *browser, loc string) (old, fresh string) {
	t.Helper()
	b.run("reveal",
		chromedp.Click(chromedp.CSS(`[data-testid=reveal-secret]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=secret]`)),
	)
	b.axeCheck("revealed secret")
	old = b.text(`[data-testid=secret]`)
	if !strings.HasPrefix(old, "whsec_") {
		t.Fatalf("revealed %q", old)
	}
	b.run("rotate",
		chromedp.Click(chromedp.CSS(`[data-testid=rotate-form] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=rotated]`)),
	)
	b.axeCheck("rotated secret")
	b.screenshot("rotated-secret")
	shown := eval[[]string](b, `[...document.querySelectorAll('[data-testid=secret]')].map(s => s.textContent.trim())`)
	if len(shown) != 1 || shown[0] == old || !strings.HasPrefix(shown[0], "whsec_") {
		t.Fatalf("after rotating the page shows %v, want the new secret alone", shown)
	}
	fresh = shown[0]
	if got := b.text(`[data-testid=old-until]`); !strings.Contains(got, "keeps signing too, until") {
		t.Errorf("the page says %q", got)
	}
	if eval[string](b, `location.pathname`) != loc+"/rotate-secret" {
		t.Errorf("the secret is shown at %s, want the POST's own answer", eval[string](b, `location.pathname`))
	}
	return old, fresh
}

// checkDeleteEndpoint deletes the endpoint id from its page: the confirmation says nothing waits, and once
// confirmed it is gone from the list and the service.
func checkDeleteEndpoint(t *testing.T, b *browser, e *env, tn tenant, id uuid.UUID) {
	t.Helper()
	b.run("delete",
		chromedp.Click(chromedp.CSS(`[data-testid=back]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=delete-endpoint]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=delete-endpoint]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=delete-waiting]`)),
	)
	if got := b.text(`[data-testid=delete-waiting]`); !strings.HasPrefix(got, "No deliveries are waiting") {
		t.Errorf("the confirmation says %q", got)
	}
	b.axeCheck("delete confirmation")
	b.screenshot("delete-confirmation")
	b.run("confirm delete",
		chromedp.Click(chromedp.CSS(`[data-testid=confirm-delete]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if p := eval[string](b, `location.pathname`); p != "/" {
		t.Errorf("after deleting: at %s", p)
	}
	if n := eval[int](b, fmt.Sprintf(`document.querySelectorAll('[data-id="%s"]').length`, id)); n != 0 {
		t.Errorf("the deleted endpoint is still listed")
	}
	if _, err := e.srv.Subscriptions.Get(context.Background(), tn.ID, id); err == nil {
		t.Errorf("the subscription is still there")
	}
}

// checkBothSecretsSign publishes an event: its delivery to path carries a signature for each valid secret
// (old and fresh), both verifying, and the endpoint's custom header.
func checkBothSecretsSign(t *testing.T, e *env, tn tenant, path, old, fresh string) {
	t.Helper()
	// A delivery now carries a signature for each valid secret: both verify.
	e.publish(tn, "order.paid", map[string]any{"order": "ord_1"})
	e.recv.waitHits(t, path, 1)
	var got hit
	for _, h := range e.recv.all() {
		if h.Path == path {
			got = h
		}
	}
	for name, secret := range map[string]string{"old": old, "new": fresh} {
		if err := verifyStandardWebhook(secret, got.Headers, []byte(got.Body)); err != nil {
			t.Errorf("the %s secret does not verify the delivery: %v", name, err)
		}
	}
	if got.Headers.Get("X-Api-Key") != "browser-key" {
		t.Errorf("the delivery's X-Api-Key %q", got.Headers.Get("X-Api-Key"))
	}
}
