package client_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/client"
)

// webhooks is a receiver's handler, as the README shows it (TestREADMEReceiver keeps the two the same).
func webhooks(secret string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		// The body as received, byte for byte: the signature is over these bytes, not a re-encoding.
		if err := client.Verify(secret, r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		// body is {"type": ..., "timestamp": ..., "data": ...}. The same event may come more than once:
		// skip a webhook-id already handled.
		fmt.Printf("%s: %s\n", r.Header.Get("webhook-id"), body)
		w.WriteHeader(http.StatusNoContent)
	}
}

// A receiver verifies each request with the subscription's secret (the one `hookline listen` prints, on
// a laptop; the one the subscription's creation answered, in production) before it trusts the body.
// client.Sign makes the request Hookline would send, for a receiver's tests.
func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	receiver := webhooks(secret)

	body := []byte(`{"type":"invoice.paid","timestamp":"2026-11-25T10:00:00Z","data":{"invoice_id":"inv_1"}}`)
	headers, err := client.Sign(secret, "01a204a9-5a26-767f-afc7-b1079f5a67a5", time.Now(), body)
	if err != nil {
		panic(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(body))
	req.Header = headers
	res := httptest.NewRecorder()
	receiver(res, req)
	fmt.Println(res.Code)

	// Signed with another secret: refused.
	forged, _ := client.Sign("whsec_"+strings.Repeat("A", 43)+"=", "01a204a9-5a26-767f-afc7-b1079f5a67a5", time.Now(), body)
	req = httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(body))
	req.Header = forged
	res = httptest.NewRecorder()
	receiver(res, req)
	fmt.Print(res.Code, " ", res.Body.String())
	// Output:
	// 01a204a9-5a26-767f-afc7-b1079f5a67a5: {"type":"invoice.paid","timestamp":"2026-11-25T10:00:00Z","data":{"invoice_id":"inv_1"}}
	// 204
	// 401 no signature of webhook-signature matches the secret
}

// The README's receiver is this file's webhooks, word for word, so that the README shows code that compiles
// and works.
func TestREADMEReceiver(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(src, []byte("func webhooks("))
	end := bytes.Index(src[start:], []byte("\n}\n"))
	fn := string(src[start : start+end+3])
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), fn) {
		t.Errorf("README.md does not show the receiver of client/example_test.go as it is:\n%s", fn)
	}
}
