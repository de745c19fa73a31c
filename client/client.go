package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultTimeout bounds each request (connecting, sending, and reading the whole answer) unless
// WithTimeout or WithHTTPClient says otherwise.
const DefaultTimeout = 30 * time.Second

// Client is a Hookline API client: every operation of api/openapi.yaml (the generated ClientWithResponses
// it embeds, e.g. GetDeliveryWithResponse) and the hand-written helpers (Publish, Me, the iterators).
// An error status of any call is an *APIError. A Client is safe for concurrent use.
type Client struct {
	*ClientWithResponses
}

// Option changes how New builds a Client.
type Option func(*settings)

type settings struct {
	httpClient *http.Client
	timeout    time.Duration
	userAgent  string
}

// WithHTTP sends requests with hc (its transport, its timeout) instead of a client of its own. (The
// generated WithHTTPClient is an option of the generated client, not of New.)
func WithHTTP(hc *http.Client) Option { return func(s *settings) { s.httpClient = hc } }

// WithTimeout bounds each request by d (DefaultTimeout otherwise; 0 for no bound). It applies to the
// client New makes, not to one given with WithHTTP.
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.timeout = d } }

// WithUserAgent names the program using the SDK ("hookline-cli/1.2.0"), put before the SDK's own
// "hookline-go/<version>" in the User-Agent header.
func WithUserAgent(product string) Option { return func(s *settings) { s.userAgent = product } }

// New returns a client of the Hookline server at baseURL (its root, e.g. "https://hooks.example.com"; the
// API is under /api/v1) that authenticates with token, a tenant's API token or an admin token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: the base URL %q is not an http or https URL such as https://hooks.example.com", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: the base URL %q has a query or fragment: give the server's root", baseURL)
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, errors.New("client: no token: an API token (hl_...) or an admin token is needed")
	}
	s := settings{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&s)
	}
	hc := s.httpClient
	if hc == nil {
		hc = &http.Client{Timeout: s.timeout}
	}
	ua := "hookline-go/" + Version()
	if s.userAgent != "" {
		ua = s.userAgent + " " + ua
	}
	authorization := "Bearer " + token
	generated, err := NewClientWithResponses(baseURL,
		WithHTTPClient(errorDoer{hc}),
		WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", authorization)
			req.Header.Set("User-Agent", ua)
			return nil
		}))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &Client{ClientWithResponses: generated}, nil
}

// Version is the SDK's version as the Go toolchain recorded it: the version of the
// github.com/hookline/hookline module the program was built with, or "devel" when that is not known.
func Version() string { return version() }

const modulePath = "github.com/hookline/hookline"

var version = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := ""
	if bi.Main.Path == modulePath {
		v = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			v = d.Version
			if d.Replace != nil && d.Replace.Version != "" {
				v = d.Replace.Version
			}
		}
	}
	if v == "" || v == "(devel)" {
		return "devel"
	}
	return v
})

// APIError is an error answer of the API: its HTTP status and the {"error": {...}} body's code (such as
// NOT_FOUND or INVALID_REQUEST), message and correlation id (quote it when reporting a problem).
type APIError struct {
	Status        int
	Code          string
	Message       string
	CorrelationID string
	// Details are where a payload does not satisfy its event type's schema (some INVALID_REQUESTs only).
	Details []ErrorDetail
	// RetryAfter is how long a RATE_LIMITED answer says to wait (its Retry-After); 0 otherwise.
	RetryAfter time.Duration
}

// The API's error codes (APIError.Code).
const (
	CodeUnauthenticated    = "UNAUTHENTICATED"
	CodeForbidden          = "FORBIDDEN"
	CodeNotFound           = "NOT_FOUND"
	CodeInvalidRequest     = "INVALID_REQUEST"
	CodeInvalidState       = "INVALID_STATE"
	CodeMaxRetriesExceeded = "MAX_RETRIES_EXCEEDED"
	CodePayloadTooLarge    = "PAYLOAD_TOO_LARGE"
	CodeRateLimited        = "RATE_LIMITED"
	CodeInternal           = "INTERNAL"
)

// ErrorDetail is one place where a payload does not satisfy its schema.
type ErrorDetail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Error is the API's message, which says what to change.
func (e *APIError) Error() string { return e.Message }

// errorDoer is the generated client's HTTP layer: it sends with the http.Client and turns every answer of
// 400 or more into an *APIError, so that every operation, generated or hand-written, fails the same way
// and callers need not look for JSON400, JSON404, ... in each response.
type errorDoer struct{ hc *http.Client }

func (d errorDoer) Do(req *http.Request) (*http.Response, error) {
	res, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode < 400 {
		return res, nil
	}
	defer res.Body.Close()
	return nil, readAPIError(res)
}

// maxErrorBody bounds what is read of an error answer: the API's are small; a proxy's page may not be.
const maxErrorBody = 64 << 10

// readAPIError decodes an error answer. One that is not the API's JSON shape (a proxy's 502 page, a
// plain-text 503 from /readyz) still becomes an *APIError, its message the status and the start of the body.
func readAPIError(res *http.Response) *APIError {
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	e := &APIError{Status: res.StatusCode, CorrelationID: res.Header.Get("X-Correlation-ID")}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	var shaped struct {
		Error struct {
			Code          string        `json:"code"`
			Message       string        `json:"message"`
			CorrelationID string        `json:"correlation_id"`
			Details       []ErrorDetail `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &shaped) == nil && shaped.Error.Message != "" {
		e.Code, e.Message, e.Details = shaped.Error.Code, shaped.Error.Message, shaped.Error.Details
		if shaped.Error.CorrelationID != "" {
			e.CorrelationID = shaped.Error.CorrelationID
		}
		return e
	}
	e.Message = fmt.Sprintf("the server answered %d %s", res.StatusCode, http.StatusText(res.StatusCode))
	// The body's words on one line, if it is printable text: enough to tell a proxy's page from the API.
	text := []rune(strings.Join(strings.Fields(string(body)), " "))
	if len(text) > 0 && utf8.Valid(body) && !slices.ContainsFunc(text, unicode.IsControl) {
		if len(text) > 200 {
			text = append(text[:200], []rune("...")...)
		}
		e.Message += ": " + string(text)
	}
	return e
}

// answer returns a generated response's decoded body, or an error when the call failed or the server
// answered a success the document does not describe (so the body was not decoded).
func answer[T any](res interface{ StatusCode() int }, body *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	if body == nil {
		return nil, fmt.Errorf("client: unexpected answer %d from the server", res.StatusCode())
	}
	return body, nil
}

// Me is who the client's token is: its tenant (nil for an admin token), its scopes and its id (nil for
// the server's HOOKLINE_ADMIN_TOKEN).
func (c *Client) Me(ctx context.Context) (*Me, error) {
	res, err := c.GetMeWithResponse(ctx, nil)
	if err != nil {
		return nil, err
	}
	return answer(res, res.JSON200, nil)
}
