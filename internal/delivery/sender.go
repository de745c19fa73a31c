package delivery

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Masked stands for a value that is sent but never shown or stored: a custom header's.
const Masked = "••••"

// UserAgent names Hookline to receivers.
const UserAgent = "Hookline-Webhooks/1.0 (+https://github.com/hookline/hookline)"

// SnippetLimit is how much of a response body an attempt keeps.
const SnippetLimit = 512

// ErrorLimit caps the error text of an attempt wherever it is stored or logged: a receiver must not be able
// to make Hookline store or log megabytes (a 1 MiB malformed status line once became the error text).
const ErrorLimit = 1024

// maxResponseHeaderBytes bounds the header block read from a receiver.
const maxResponseHeaderBytes = 16 << 10

// ErrBlockedAddress is returned when the SSRF guard refuses to dial an address.
var ErrBlockedAddress = errors.New("address not allowed: the endpoint resolves to a loopback, private or other non-public address; " +
	"the server's operator can allow those with HOOKLINE_ALLOW_PRIVATE_NETWORKS=true, for development only")

// SenderOptions configure a Sender.
type SenderOptions struct {
	// Timeout bounds a whole attempt: getting an access token, connect, TLS, request and reading the
	// response snippet.
	Timeout time.Duration
	// AllowPrivate turns the SSRF guard off.
	AllowPrivate bool
	// AllowAddrs are exact "ip:port" addresses allowed even with the guard on (the built-in demo receiver).
	AllowAddrs []string
	// RootCAs are the authorities endpoints' (and token endpoints') certificates are verified against; nil:
	// the system's. For operators whose receivers use a private CA, and for tests.
	RootCAs *x509.CertPool
}

// Sender sends one signed webhook request. It follows no redirects and, unless told otherwise, dials no
// internal address: the check runs on the resolved IP at connect time, so a hostname that resolves (or
// re-resolves) to an internal address is refused too. Token requests and endpoints that want a client
// certificate go through transports built the same way, on the same guarded dialer.
type Sender struct {
	plain          *clients // no client certificate
	certTransports *clientCertTransports
	tokens         *accessTokens
	timeout        time.Duration
}

// clients are the HTTP clients of one TLS identity (none, or a client certificate), sharing its transport:
// one for deliveries, one for token requests. Neither follows a redirect.
type clients struct {
	transport *http.Transport
	deliver   *http.Client
	token     *http.Client
}

func newClients(t *http.Transport) *clients {
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &clients{
		transport: t,
		deliver:   &http.Client{Transport: t, CheckRedirect: noRedirect},
		token:     &http.Client{Transport: tokenTransport{base: t}, CheckRedirect: noRedirect},
	}
}

// NewSender builds a Sender with its own transports.
func NewSender(o SenderOptions) *Sender {
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	allowed := map[string]bool{}
	for _, a := range o.AllowAddrs {
		allowed[a] = true
	}
	own := ownAddrs()
	dialer := &net.Dialer{
		Timeout:   o.Timeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			if o.AllowPrivate || allowed[address] {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return ErrBlockedAddress
			}
			if !PublicAddr(ap.Addr()) || own[ap.Addr().Unmap()] {
				return ErrBlockedAddress // the address itself stays out of the error: tenants read it
			}
			return nil
		},
	}
	// newTransport builds a transport presenting cert (nil: none) when an endpoint asks for one.
	newTransport := func(cert *tls.Certificate) *http.Transport {
		return &http.Transport{
			Proxy:       nil, // a proxy would dial on our behalf and bypass the guard
			DialContext: dialer.DialContext,
			TLSClientConfig: &tls.Config{
				RootCAs:              o.RootCAs,
				GetClientCertificate: presentCertificate(cert),
			},
			ForceAttemptHTTP2: true,
			// Keep a connection per concurrent attempt to one host: with fewer kept idle, a busy endpoint's
			// connections were closed and dialled again all the time (a tenth of the worker's CPU in a drain).
			MaxIdleConns:           1024,
			MaxIdleConnsPerHost:    256,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    o.Timeout,
			ResponseHeaderTimeout:  o.Timeout,
			MaxResponseHeaderBytes: maxResponseHeaderBytes,
			DisableCompression:     true, // never inflate a receiver's body: a gzip bomb stays small
		}
	}
	return &Sender{
		timeout: o.Timeout,
		plain:   newClients(newTransport(nil)),
		certTransports: newClientCertTransports(func(cert *tls.Certificate) *clients {
			return newClients(newTransport(cert))
		}, maxCertTransports),
		tokens: newAccessTokens(),
	}
}

// presentCertificate answers an endpoint's certificate request with cert (nil: with none, as Go does when
// no certificate is configured), and notes on the handshake's context that one was asked for, so that a
// refused handshake can be explained.
func presentCertificate(cert *tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if asked, ok := cri.Context().Value(certAskedKey{}).(*atomic.Bool); ok {
			asked.Store(true)
		}
		if cert == nil {
			return &tls.Certificate{}, nil
		}
		return cert, nil
	}
}

// certAskedKey keys the *atomic.Bool on a request's context that the TLS handshake sets when the server
// asks for a client certificate. (The dial runs on a context that keeps the request's values.)
type certAskedKey struct{}

func withCertAsked(ctx context.Context) (context.Context, *atomic.Bool) {
	asked := new(atomic.Bool)
	return context.WithValue(ctx, certAskedKey{}, asked), asked
}

// CloseIdle closes the sender's idle keep-alive connections (at shutdown), those of every transport.
func (s *Sender) CloseIdle() {
	s.plain.transport.CloseIdleConnections()
	s.certTransports.closeIdle()
}

// PublicAddr reports whether ip may be dialled with the SSRF guard on. It is an allow-list: only global
// unicast addresses outside every special-purpose range pass. Refused: loopback, private, link-local (which
// includes the cloud metadata address 169.254.169.254), unspecified, multicast, CGNAT, documentation,
// benchmarking, reserved, and the IPv6 forms that embed or translate IPv4 (IPv4-mapped and -compatible,
// NAT64, 6to4, Teredo) as well as site-local. The host's own interface addresses are refused at dial time.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return false
	}
	for _, p := range specialPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// specialPrefixes are the IANA special-purpose ranges that IsGlobalUnicast lets through.
var specialPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the limited broadcast address
	netip.MustParsePrefix("::/96"),           // IPv4-compatible IPv6 (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 can reach IPv4 internals
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments, Teredo included
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("5f00::/16"),       // segment routing SIDs
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated, still routed internally by some)
}

// ownAddrs are this host's interface addresses: a public address of the host itself reaches its own
// services (the dashboard, metrics, a database bound to it), so it is refused like loopback.
func ownAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().Unmap()] = true
		}
	}
	return out
}

// Request is one attempt to send.
type Request struct {
	URL           string
	MsgID         string
	Body          []byte
	Secrets       []string
	CustomHeaders map[string]string
	// SubscriptionID keys the access token kept for Auth.
	SubscriptionID uuid.UUID
	// Auth is how the endpoint wants the sender to authenticate; nil: it does not.
	Auth *Auth
	// ClientCertificate is presented when the endpoint asks for one; nil: none.
	ClientCertificate *ClientCertificate
}

// Response is what one attempt produced.
type Response struct {
	StartedAt  time.Time
	Duration   time.Duration
	Status     int // 0 when no response came
	RetryAfter time.Duration
	Snippet    string
	Err        string
	// Headers are the request headers that were sent, the custom ones by name only, their value Masked
	// (it may be a credential): the attempt's stored copy shows the customer that they were sent.
	Headers map[string]string
	// Canceled is set when the attempt was cut short by shutdown rather than by the receiver.
	Canceled bool
	// TokenRefused is set when the endpoint answered 401 to an OAuth 2 access token: the token is dropped
	// and the next attempt fetches a new one, so the attempt is transient whatever Classify says of 401.
	TokenRefused bool
}

// Send makes one attempt. It never returns an error: every failure is part of the Response, as the
// attempt record needs it. now is the clock used for the webhook-timestamp, the start time and the life of
// access tokens.
func (s *Sender) Send(ctx context.Context, req Request, now func() time.Time) Response {
	start := now()
	ts := start.Unix()
	tsText := strconv.FormatInt(ts, 10)
	res := Response{StartedAt: start}
	headers := make(map[string]string, 5)
	headers["content-type"] = "application/json"
	headers["user-agent"] = UserAgent
	headers["webhook-id"] = req.MsgID
	headers["webhook-timestamp"] = tsText
	sig, err := Sign(req.Secrets, req.MsgID, ts, req.Body)
	if err != nil {
		res.Err = LimitError("signing: " + err.Error())
		res.Headers = headers
		return res
	}
	headers["webhook-signature"] = sig
	for k := range req.CustomHeaders {
		if lk := strings.ToLower(k); headers[lk] == "" { // ours win, as on the wire
			headers[lk] = Masked
		}
	}
	switch {
	case req.Auth == nil:
	case req.Auth.Type == AuthBasic:
		headers["authorization"] = maskedBasic
	case req.Auth.Type == AuthOAuth2ClientCredentials:
		headers["authorization"] = maskedBearer
	default:
		res.Headers = headers
		res.Err = "invalid request: the endpoint's authentication type is not one this server knows"
		return res
	}
	res.Headers = headers

	cl := s.plain
	if req.ClientCertificate != nil {
		if cl, err = s.certTransports.clients(req.ClientCertificate); err != nil {
			res.Err = err.Error()
			return res
		}
	}

	// One deadline for the whole attempt, the token request included.
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, asked := withCertAsked(ctx)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		res.Err = "invalid request: the endpoint URL cannot be requested"
		return res
	}
	for k, v := range req.CustomHeaders {
		hr.Header.Set(k, v)
	}
	// Ours (the same as headers) win over a custom header of the same name. They are set under their
	// canonical names, as Set would, with their values in one array rather than one each.
	values := [...]string{"application/json", UserAgent, req.MsgID, tsText, sig, ""}
	hr.Header["Content-Type"] = values[0:1:1]
	hr.Header["User-Agent"] = values[1:2:2]
	hr.Header["Webhook-Id"] = values[2:3:3]
	hr.Header["Webhook-Timestamp"] = values[3:4:4]
	hr.Header["Webhook-Signature"] = values[4:5:5]

	t0 := time.Now()
	var bearer string
	if req.Auth != nil {
		switch req.Auth.Type {
		case AuthBasic:
			values[5] = basicAuthorization(req.Auth.Username, req.Auth.Password)
		case AuthOAuth2ClientCredentials:
			bearer, err = s.tokens.tokenFor(ctx, req.SubscriptionID, tokenConfigKey(req.Auth, req.ClientCertificate),
				tokenSource{auth: req.Auth, client: cl.token, certConfigured: req.ClientCertificate != nil, timeout: s.timeout}, now)
			if err != nil {
				// No token, no request: the endpoint would only refuse it. Status 0 makes it transient.
				res.Duration = time.Since(t0)
				var te *tokenError
				if !errors.As(err, &te) { // this attempt's deadline passed while another's request ran
					te = &tokenError{describeTokenError(err, s.timeout, req.Auth.ClientSecret, false, false)}
				}
				res.Err = LimitError("could not get an access token: " + te.text)
				res.Canceled = errors.Is(ctx.Err(), context.Canceled)
				return res
			}
			values[5] = "Bearer " + bearer
		}
		hr.Header["Authorization"] = values[5:6:6]
	}
	resp, err := cl.deliver.Do(hr)
	if err != nil {
		res.Duration = time.Since(t0)
		res.Err = describeSendError(err, s.timeout, req.ClientCertificate != nil, asked.Load())
		res.Canceled = errors.Is(ctx.Err(), context.Canceled)
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	if bearer != "" && resp.StatusCode == http.StatusUnauthorized {
		// The endpoint no longer takes the token (revoked, or expired early): the next attempt gets a new one.
		s.tokens.drop(req.SubscriptionID, bearer)
		res.TokenRefused = true
	}
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

// describeSendError is describeError knowing whether a client certificate was configured and whether the
// endpoint asked for one: a TLS alert from the endpoint then most likely refuses the certificate (or its
// absence), which Go's texts ("remote error: tls: bad certificate") leave the customer to guess.
func describeSendError(err error, timeout time.Duration, certConfigured, certAsked bool) string {
	var (
		op    *net.OpError
		alert tls.AlertError
	)
	if certAsked && ((errors.As(err, &op) && op.Op == "remote error") || errors.As(err, &alert)) {
		if certConfigured {
			return "tls: the endpoint refused the handshake (it may not accept this client certificate)"
		}
		return "tls: the endpoint asked for a client certificate (mutual TLS) and none is configured"
	}
	return describeError(err, timeout)
}

// describeError says what went wrong in words a tenant may read: a category and a safe detail, never the
// resolver's address, the worker's source address or what a name resolved to (Go's own error texts carry
// all three), and at most ErrorLimit bytes.
func describeError(err error, timeout time.Duration) string {
	var (
		ne       net.Error
		dnsErr   *net.DNSError
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invalid  x509.CertificateInvalidError
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
		certErr  *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, ErrBlockedAddress):
		return ErrBlockedAddress.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("timeout: no complete answer within %s", timeout)
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "dns: the endpoint's host name does not exist"
		}
		return "dns: the endpoint's host name could not be resolved right now"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens on the endpoint's port"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset by the endpoint"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable: no route to the endpoint"
	case errors.As(err, &unknown):
		return "tls: the endpoint's certificate is signed by an unknown authority"
	case errors.As(err, &hostErr):
		return "tls: the endpoint's certificate is not valid for its host name"
	case errors.As(err, &invalid):
		return "tls: the endpoint's certificate is invalid or expired"
	case errors.As(err, &certErr):
		return "tls: the endpoint's certificate could not be verified"
	case errors.As(err, &recErr):
		return "tls: the endpoint did not answer with TLS"
	case errors.As(err, &alertErr):
		return "tls: the endpoint refused the handshake"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed by the endpoint before a complete answer"
	case strings.Contains(err.Error(), "server response headers exceeded"):
		return fmt.Sprintf("invalid answer: response headers larger than %d KiB", maxResponseHeaderBytes>>10)
	case strings.Contains(err.Error(), "malformed HTTP"), strings.Contains(err.Error(), "malformed MIME"):
		return "invalid answer: not a well-formed HTTP response"
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "tls: the endpoint answered plain HTTP to an https URL"
	case strings.Contains(err.Error(), "tls:"):
		return "tls: the handshake with the endpoint failed"
	}
	return "connection failed: the endpoint could not be reached"
}

// LimitError cuts an error text to ErrorLimit bytes on a rune boundary, for everything stored or logged
// that a receiver may have shaped.
func LimitError(s string) string {
	if len(s) <= ErrorLimit {
		return s
	}
	s = s[:ErrorLimit]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
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
