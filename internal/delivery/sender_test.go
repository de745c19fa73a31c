package delivery

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rawServer answers every connection with answer (nil: close at once) and returns its address.
func rawServer(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = bufio.NewReader(c).ReadString('\n') // the request line is enough
				if answer != nil {
					answer(c)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// Receivers shape the error text: whatever they send, it is a category in words, at most ErrorLimit bytes,
// and names no address (the resolver's, ours, or what the name resolved to).
func TestSendErrorsAreBoundedCategories(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", 1<<20)
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(tlsSrv.Close)
	cases := []struct {
		name, url, want string
	}{
		{"megabyte status line", "http://" + rawServer(t, func(c net.Conn) { _, _ = c.Write([]byte("HTTP/1.1 " + huge + "\r\n\r\n")) }) + "/", "invalid answer"},
		{"megabyte header", "http://" + rawServer(t, func(c net.Conn) {
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nX-Big: " + huge + "\r\n\r\n"))
		}) + "/", "response headers larger than"},
		{"closed at once", "http://" + rawServer(t, nil) + "/", "connection closed by the endpoint"},
		{"refused", "http://" + refused + "/", "connection refused"},
		{"unknown authority", tlsSrv.URL, "unknown authority"},
		{"plain HTTP on https", "https://" + rawServer(t, func(c net.Conn) { _, _ = c.Write([]byte("HTTP/1.1 200 OK\r\n\r\n")) }) + "/", "tls:"},
		{"no such host", "http://no-such-host.invalid/", "dns: the endpoint's host name does not exist"},
	}
	s := NewSender(SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	defer s.CloseIdle()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := s.Send(context.Background(), Request{URL: c.url, MsgID: "msg_1", Body: []byte(`{}`),
				Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}, time.Now)
			if !strings.Contains(res.Err, c.want) {
				t.Errorf("error %q, want it to say %q", res.Err, c.want)
			}
			if len(res.Err) > ErrorLimit {
				t.Errorf("error is %d bytes, more than %d", len(res.Err), ErrorLimit)
			}
			if strings.Contains(res.Err, "127.0.0.1") || strings.Contains(res.Err, "::1") {
				t.Errorf("error names an address: %q", res.Err)
			}
		})
	}
}

// With the guard on, a loopback receiver is refused, and the refusal does not say which address.
func TestSendBlockedAddressNamesNoAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	s := NewSender(SenderOptions{Timeout: 5 * time.Second})
	defer s.CloseIdle()
	res := s.Send(context.Background(), Request{URL: srv.URL, MsgID: "m", Body: []byte(`{}`),
		Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}, time.Now)
	if res.Err != ErrBlockedAddress.Error() {
		t.Fatalf("error %q, want %q", res.Err, ErrBlockedAddress.Error())
	}
}

func TestLimitError(t *testing.T) {
	t.Parallel()
	s := LimitError(strings.Repeat("é", ErrorLimit)) // 2 bytes each: the cut falls inside a rune
	if len(s) > ErrorLimit || !strings.HasPrefix(strings.Repeat("é", ErrorLimit), s) || len(s) < ErrorLimit-1 {
		t.Fatalf("LimitError kept %d bytes", len(s))
	}
}

// A receiver's answer costs at most the snippet, whatever it sends: an endless body is cut off, and a
// gzip-encoded one is never inflated (a gzip bomb stays its compressed size, and only 512 bytes of it are
// kept).
func TestSendBoundsTheAnswer(t *testing.T) {
	t.Parallel()
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("A", 32<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	gzipped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(bytes.Repeat([]byte{0x1f, 0x8b, 0x08, 0x00}, 1<<16)) // 256 KiB that claims to be gzip
	}))
	defer gzipped.Close()
	s := NewSender(SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	defer s.CloseIdle()
	for name, url := range map[string]string{"endless": endless.URL, "gzip": gzipped.URL} {
		start := time.Now()
		res := s.Send(context.Background(), Request{URL: url, MsgID: "m", Body: []byte(`{}`),
			Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}, time.Now)
		if res.Status != 200 || len(res.Snippet) > SnippetLimit || res.Err != "" {
			t.Errorf("%s: status %d, snippet %d bytes, error %q", name, res.Status, len(res.Snippet), res.Err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%s: the attempt took %s: the body was read far past the snippet", name, took)
		}
	}
}

// The request carries our five headers once each, over any custom header of the same name in any case,
// and the custom ones as given; the response names ours and the custom ones with their value masked, the
// ones stored with the attempt.
func TestSendHeaders(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	t.Cleanup(srv.Close)
	s := NewSender(SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	defer s.CloseIdle()
	secrets := []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	at := time.Unix(1767225600, 0)
	res := s.Send(context.Background(), Request{URL: srv.URL, MsgID: "msg_1", Body: []byte(`{}`), Secrets: secrets,
		CustomHeaders: map[string]string{"content-type": "text/plain", "WEBHOOK-SIGNATURE": "forged", "x-trace": "abc"}},
		func() time.Time { return at })
	if res.Err != "" || res.Status != http.StatusOK {
		t.Fatalf("send: %d %s", res.Status, res.Err)
	}
	sig, err := Sign(secrets, "msg_1", at.Unix(), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	h := <-got
	for k, want := range map[string]string{"Content-Type": "application/json", "User-Agent": UserAgent, "Webhook-Id": "msg_1",
		"Webhook-Timestamp": "1767225600", "Webhook-Signature": sig, "X-Trace": "abc"} {
		if v := h.Values(k); len(v) != 1 || v[0] != want {
			t.Errorf("%s: %q, want %q", k, v, want)
		}
	}
	want := map[string]string{"content-type": "application/json", "user-agent": UserAgent, "webhook-id": "msg_1",
		"webhook-timestamp": "1767225600", "webhook-signature": sig, "x-trace": Masked}
	if len(res.Headers) != len(want) {
		t.Errorf("response headers %v, want %v", res.Headers, want)
	}
	for k, v := range want {
		if res.Headers[k] != v {
			t.Errorf("response header %s = %q, want %q", k, res.Headers[k], v)
		}
	}
}
