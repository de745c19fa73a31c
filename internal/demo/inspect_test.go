package demo_test

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/demo"
)

// /inspect shows what it received, exactly, and checks each signature with the secret a person pastes: valid
// with the subscription's secret, not with another.
func TestReceiverInspect(t *testing.T) {
	t.Parallel()
	rcv, err := demo.StartReceiver(demo.ReceiverOptions{NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	get := func(resp *http.Response, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", resp.Request.URL, resp.StatusCode, b)
		}
		return string(b)
	}
	if page := get(http.Get(rcv.URL("/inspect"))); !strings.Contains(page, "Nothing received yet.") {
		t.Fatal("an empty bin does not say so")
	}

	secret := delivery.NewSecret()
	body := `{"type":"order.created","timestamp":"2026-11-25T12:00:00Z","data":{"note":"<b>bold</b>"}}`
	ts := time.Now().Unix()
	sig, err := delivery.Sign([]string{secret}, "msg_1", ts, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", rcv.URL("/inspect"), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", "msg_1")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	get(http.DefaultClient.Do(req))

	page := get(http.Get(rcv.URL("/inspect")))
	if !strings.Contains(page, "webhook-id: msg_1") || !strings.Contains(page, "&lt;b&gt;bold&lt;/b&gt;") || strings.Contains(page, "<b>bold</b>") {
		t.Errorf("the page does not show the request as received (escaped): %s", page)
	}
	if strings.Contains(page, "signature valid") {
		t.Error("a signature is judged before any secret was given")
	}
	if page := get(http.PostForm(rcv.URL("/inspect/verify"), url.Values{"secret": {secret}})); !strings.Contains(page, "signature valid with this secret ✓") {
		t.Errorf("the right secret does not verify: %s", page)
	}
	if page := get(http.PostForm(rcv.URL("/inspect/verify"), url.Values{"secret": {delivery.NewSecret()}})); !strings.Contains(page, "signature not valid with this secret ✗") {
		t.Errorf("another secret verifies: %s", page)
	}
}
