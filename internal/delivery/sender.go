package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// UserAgent names Hookline to receivers.
const UserAgent = "Hookline-Webhooks/1.0 (+https://github.com/hookline/hookline)"

// SnippetLimit is how much of a response body an attempt keeps.
const SnippetLimit = 512

// ErrBlockedAddress is returned when the SSRF guard refuses to dial an address.
var ErrBlockedAddress = errors.New("address not allowed: loopback, private, link-local and other internal addresses are refused (HOOKLINE_ALLOW_PRIVATE_NETWORKS)")

// SenderOptions configure a Sender.
type SenderOptions struct {
	// Timeout bounds a whole attempt: connect, TLS, request and reading the response snippet.
	Timeout time.Duration
	// AllowPrivate turns the SSRF guard off.
	AllowPrivate bool
	// AllowAddrs are exact "ip:port" addresses allowed even with the guard on (the built-in demo receiver).
	AllowAddrs []string
}

// Sender sends one signed webhook request. It follows no redirects and, unless told otherwise, dials no
// internal address: the check runs on the resolved IP at connect time, so a hostname that resolves (or
// re-resolves) to an internal address is refused too.
type Sender struct {
	client  *http.Client
	timeout time.Duration
}

// NewSender builds a Sender with its own transport.
func NewSender(o SenderOptions) *Sender {
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	allowed := map[string]bool{}
	for _, a := range o.AllowAddrs {
		allowed[a] = true
	}
	dialer := &net.Dialer{
		Timeout:   o.Timeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			if o.AllowPrivate || allowed[address] {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrBlockedAddress, address)
			}
			if !PublicAddr(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrBlockedAddress, ap.Addr())
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would dial on our behalf and bypass the guard
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
		DisableCompression:    true, // never inflate a receiver's body: a gzip bomb stays small
	}
	return &Sender{
		timeout: o.Timeout,
		client: &http.Client{
			Transport:     transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// CloseIdle closes the sender's idle keep-alive connections (at shutdown).
func (s *Sender) CloseIdle() { s.client.CloseIdleConnections() }

// PublicAddr reports whether ip may be dialled with the SSRF guard on: not loopback, private, link-local
// (which includes the cloud metadata address 169.254.169.254), unspecified, multicast, CGNAT or an
// IPv4-mapped form of those.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach IPv4 internals
	netip.MustParsePrefix("2001:db8::/32"),
}

// Request is one attempt to send.
type Request struct {
	URL           string
	MsgID         string
	Body          []byte
	Secrets       []string
	CustomHeaders map[string]string
}

// Response is what one attempt produced.
type Response struct {
	StartedAt  time.Time
	Duration   time.Duration
	Status     int // 0 when no response came
	RetryAfter time.Duration
	Snippet    string
	Err        string
	// Headers are the request headers that were sent, minus the custom ones (those may hold secrets).
	Headers map[string]string
	// Canceled is set when the attempt was cut short by shutdown rather than by the receiver.
	Canceled bool
}

// Send makes one attempt. It never returns an error: every failure is part of the Response, as the
// attempt record needs it. now is the clock used for the webhook-timestamp and the start time.
func (s *Sender) Send(ctx context.Context, req Request, now func() time.Time) Response {
	start := now()
	ts := start.Unix()
	res := Response{StartedAt: start}
	headers := map[string]string{
		"content-type":      "application/json",
		"user-agent":        UserAgent,
		"webhook-id":        req.MsgID,
		"webhook-timestamp": strconv.FormatInt(ts, 10),
	}
	sig, err := Sign(req.Secrets, req.MsgID, ts, req.Body)
	if err != nil {
		res.Err = "signing: " + err.Error()
		res.Headers = headers
		return res
	}
	headers["webhook-signature"] = sig
	res.Headers = headers

	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		res.Err = "invalid request: " + err.Error()
		return res
	}
	for k, v := range req.CustomHeaders {
		hr.Header.Set(k, v)
	}
	for k, v := range headers { // ours win over a custom header of the same name
		hr.Header.Set(k, v)
	}
	t0 := time.Now()
	resp, err := s.client.Do(hr)
	if err != nil {
		res.Duration = time.Since(t0)
		res.Err = describeError(err, s.timeout)
		res.Canceled = errors.Is(ctx.Err(), context.Canceled)
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), start)
	buf, err := io.ReadAll(io.LimitReader(resp.Body, SnippetLimit))
	res.Snippet = toValidUTF8(buf)
	if err != nil && len(buf) == 0 {
		res.Err = "reading response: " + describeError(err, s.timeout)
	}
	// Drain a little so the connection can be reused; a huge body is not worth reading.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	res.Duration = time.Since(t0)
	return res
}

func describeError(err error, timeout time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(err, ErrBlockedAddress):
		var msg = err.Error()
		if i := strings.Index(msg, ErrBlockedAddress.Error()); i >= 0 {
			msg = msg[i:]
		}
		return msg
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("timeout: no complete answer within %s", timeout)
	}
	return err.Error()
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// toValidUTF8 keeps a snippet printable and storable in a text column, and within SnippetLimit: a rune
// cut by the limit would otherwise become a 3-byte U+FFFD and push the snippet past it.
func toValidUTF8(b []byte) string {
	s := strings.ReplaceAll(string(b), "\x00", "")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for len(s) > SnippetLimit {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
