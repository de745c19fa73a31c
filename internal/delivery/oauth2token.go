package delivery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"
)

const (
	// tokenKeepMargin: a kept token is dropped this long before it expires, so that it does not expire
	// between being picked and reaching the endpoint, nor on an endpoint whose clock runs a little ahead.
	tokenKeepMargin = 30 * time.Second
	// tokenDefaultLifetime is how long a token whose answer gives no expires_in is kept (RFC 6749 §5.1 makes
	// it optional). Its real lifetime is unknown: an endpoint answering 401 drops it, but one that answers
	// an expired token with 403 or 400 would otherwise fail for ever. Five minutes costs one token request
	// per subscription every five minutes, which no authorization server minds.
	tokenDefaultLifetime = 5 * time.Minute
	// maxTokenAnswerBytes bounds what is read of a token endpoint's answer; a token response is a few KiB
	// at most, even with a JWT in it.
	maxTokenAnswerBytes = 64 << 10
)

// errTokenAnswerTooLarge is a token endpoint answer over maxTokenAnswerBytes.
var errTokenAnswerTooLarge = errors.New("the token endpoint's answer is larger than 64 KiB")

// accessTokens keeps one access token per subscription, with the key of the configuration it was obtained
// with, until tokenKeepMargin before it expires, and makes concurrent attempts of one subscription share
// one token request.
type accessTokens struct {
	flights singleflight.Group

	mu      sync.Mutex
	kept    map[uuid.UUID]keptToken
	sweepAt int // sweep expired tokens out when kept grows to this many
}

type keptToken struct {
	config [sha256.Size]byte
	value  string
	until  time.Time
}

// minTokenSweep is the size of the kept tokens under which expired ones are left until replaced: a
// deleted subscription's token is only memory, and sweeping a small map often is not worth it.
const minTokenSweep = 1024

func newAccessTokens() *accessTokens {
	return &accessTokens{kept: map[uuid.UUID]keptToken{}, sweepAt: minTokenSweep}
}

// tokenSource is where and how a subscription's tokens are requested.
type tokenSource struct {
	auth           *Auth
	client         *http.Client
	certConfigured bool          // client presents a client certificate
	timeout        time.Duration // the attempt's, for the words of an error
}

// tokenFor returns an access token for sub: the kept one while it is good for config, else a new one from
// src, one request at a time for a subscription and configuration (the request runs on the context of the
// attempt that started it). It waits for a request another attempt started at most as long as ctx allows.
// Its error is a *tokenError, or ctx's.
func (at *accessTokens) tokenFor(ctx context.Context, sub uuid.UUID, config [sha256.Size]byte, src tokenSource,
	now func() time.Time) (string, error) {
	if v, ok := at.lookup(sub, config, now()); ok {
		return v, nil
	}
	flight := sub.String() + hex.EncodeToString(config[:])
	ch := at.flights.DoChan(flight, func() (any, error) {
		// An attempt that missed the kept token may start its flight just after another one landed.
		if v, ok := at.lookup(sub, config, now()); ok {
			return v, nil
		}
		tok, err := requestToken(ctx, src)
		if err != nil {
			return nil, err
		}
		at.keep(sub, keptToken{config: config, value: tok.AccessToken, until: now().Add(tokenKeep(tok))}, now())
		return tok.AccessToken, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// lookup is the token kept for sub, if it was obtained with config and is still good at now.
func (at *accessTokens) lookup(sub uuid.UUID, config [sha256.Size]byte, now time.Time) (string, bool) {
	at.mu.Lock()
	defer at.mu.Unlock()
	k, ok := at.kept[sub]
	if !ok || k.config != config || !now.Before(k.until) {
		return "", false
	}
	return k.value, true
}

// keep keeps t for sub (replacing a token of an older configuration), unless it is already too old to keep.
func (at *accessTokens) keep(sub uuid.UUID, t keptToken, now time.Time) {
	if !now.Before(t.until) {
		return // a token that lives under tokenKeepMargin serves the attempts that waited for it, no more
	}
	at.mu.Lock()
	defer at.mu.Unlock()
	at.kept[sub] = t
	if len(at.kept) >= at.sweepAt {
		for id, k := range at.kept {
			if !now.Before(k.until) {
				delete(at.kept, id)
			}
		}
		at.sweepAt = max(2*len(at.kept), minTokenSweep)
	}
}

// drop forgets sub's kept token if it is still value (the endpoint refused it): a token fetched since by
// another attempt stays.
func (at *accessTokens) drop(sub uuid.UUID, value string) {
	at.mu.Lock()
	defer at.mu.Unlock()
	if k, ok := at.kept[sub]; ok && k.value == value {
		delete(at.kept, sub)
	}
}

// len is how many tokens are kept (for tests).
func (at *accessTokens) len() int {
	at.mu.Lock()
	defer at.mu.Unlock()
	return len(at.kept)
}

// tokenError is why no token was obtained, in words a tenant may read (describeTokenError's): described
// where the request ran, so that every attempt that waited for it reads the same.
type tokenError struct{ text string }

func (e *tokenError) Error() string { return e.text }

// requestToken asks src's token endpoint for a token with the client credentials grant.
func requestToken(ctx context.Context, src tokenSource) (*oauth2.Token, error) {
	ctx, asked := withCertAsked(ctx)
	tok, err := requestTokenFrom(ctx, src.auth, src.client)
	if err != nil {
		return nil, &tokenError{describeTokenError(err, src.timeout, src.auth.ClientSecret, src.certConfigured, asked.Load())}
	}
	return tok, nil
}

// requestTokenFrom asks a's token endpoint for a token with the client credentials grant, through client.
func requestTokenFrom(ctx context.Context, a *Auth, client *http.Client) (*oauth2.Token, error) {
	if u, err := url.Parse(a.TokenURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errTokenURLInvalid
	}
	conf := clientcredentials.Config{
		ClientID:     a.ClientID,
		ClientSecret: a.ClientSecret,
		TokenURL:     a.TokenURL,
		Scopes:       a.Scopes,
		// Never the library's auto-detection: it sends the secret a second way when the first fails.
		AuthStyle: oauth2.AuthStyleInHeader,
	}
	if a.ClientAuth == ClientAuthBody {
		conf.AuthStyle = oauth2.AuthStyleInParams
	}
	if a.Audience != "" {
		conf.EndpointParams = url.Values{"audience": {a.Audience}}
	}
	tok, err := conf.Token(context.WithValue(ctx, oauth2.HTTPClient, client))
	if err != nil {
		return nil, err
	}
	if !headerSafeToken(tok.AccessToken) {
		return nil, errTokenNotHeaderSafe
	}
	return tok, nil
}

var (
	errTokenURLInvalid    = errors.New("the token URL is not an http or https URL")
	errTokenNotHeaderSafe = errors.New("the token endpoint's access_token holds characters an HTTP header cannot carry")
)

// headerSafeToken reports whether a token can be sent after "Bearer ": visible ASCII only (RFC 6750's
// b64token is a subset; some servers issue wider tokens that receivers take all the same).
func headerSafeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return s != ""
}

// tokenKeep is how long t is kept: until tokenKeepMargin before the end of its expires_in, read from the
// answer rather than from t.Expiry (which the library computes on the wall clock, not the sender's), or
// tokenDefaultLifetime when the answer gives none.
func tokenKeep(t *oauth2.Token) time.Duration {
	var seconds float64
	switch v := t.Extra("expires_in").(type) {
	case float64: // JSON, or a form-encoded answer's "3600.0"
		seconds = v
	case int64: // a form-encoded answer's "3600"
		seconds = float64(v)
	case string: // JSON from a server that quotes it (PayPal does)
		seconds, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
	}
	if !(seconds > 0) { // absent, zero, negative or not a number
		return tokenDefaultLifetime
	}
	return time.Duration(min(seconds, math.MaxInt32))*time.Second - tokenKeepMargin
}

// tokenTransport sends token requests as Hookline and reads at most maxTokenAnswerBytes of the answer
// before the OAuth 2 library sees it (the library itself would read 1 MiB).
type tokenTransport struct{ base http.RoundTripper }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", UserAgent)
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswerBytes+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if len(body) > maxTokenAnswerBytes {
		return nil, errTokenAnswerTooLarge
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// describeTokenError says why no token was obtained, in words a tenant may read: never the secret (an
// authorization server's error text that repeats it is left out), the token, or an address.
func describeTokenError(err error, timeout time.Duration, secret string, certConfigured, certAsked bool) string {
	var (
		re *oauth2.RetrieveError
		ne net.Error
	)
	switch {
	case errors.Is(err, errTokenAnswerTooLarge):
		return errTokenAnswerTooLarge.Error()
	case errors.Is(err, errTokenURLInvalid):
		return errTokenURLInvalid.Error()
	case errors.Is(err, errTokenNotHeaderSafe):
		return errTokenNotHeaderSafe.Error()
	case errors.As(err, &re) && re.Response != nil:
		status := re.Response.StatusCode
		if status >= 300 && status < 400 {
			return fmt.Sprintf("the token endpoint answered %d (redirects are not followed)", status)
		}
		msg := fmt.Sprintf("the token endpoint answered %d", status)
		if code := oauthText(re.ErrorCode, 64, secret); code != "" {
			msg += " " + code
			if desc := oauthText(re.ErrorDescription, 256, secret); desc != "" {
				msg += ": " + desc
			}
		}
		return msg
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("the token endpoint did not answer within %s", timeout)
	case errors.Is(err, context.Canceled):
		// The attempt whose context the shared request ran on was canceled (shutdown).
		return "the token request was cut short by a shutdown"
	case strings.Contains(err.Error(), "server response missing access_token"):
		return "the token endpoint's answer holds no access_token"
	case strings.HasPrefix(err.Error(), "oauth2: cannot parse"):
		return "the token endpoint's answer is not a token response (JSON with an access_token)"
	}
	// A connection's failure, in the words of a delivery's, about the token endpoint.
	return strings.ReplaceAll(describeSendError(err, timeout, certConfigured, certAsked), "the endpoint", "the token endpoint")
}

// oauthText is an authorization server's error code or description fit to show: printable ASCII (RFC 6749
// §5.2 allows no more), at most n bytes, and nothing at all if it holds the client secret.
func oauthText(s string, n int, secret string) string {
	if secret != "" && strings.Contains(s, secret) {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < n; i++ {
		if c := s[i]; c >= 0x20 && c <= 0x7e {
			b.WriteByte(c)
		}
	}
	out := strings.TrimSpace(b.String())
	if secret != "" && strings.Contains(out, secret) { // the secret with control characters between its letters
		return ""
	}
	return out
}
