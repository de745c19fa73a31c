package delivery

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
)

// Auth types an endpoint may ask for.
const (
	// AuthBasic sends Authorization: Basic base64(username:password) (RFC 7617).
	AuthBasic = "basic"
	// AuthOAuth2ClientCredentials obtains an access token with the client credentials grant (RFC 6749
	// §4.4) and sends Authorization: Bearer <token> (RFC 6750).
	AuthOAuth2ClientCredentials = "oauth2_client_credentials"
)

// How an OAuth 2 client authenticates to the token endpoint (RFC 6749 §2.3.1).
const (
	// ClientAuthBasic sends client_id and client_secret, form-encoded, as HTTP Basic credentials: the way
	// every authorization server must support.
	ClientAuthBasic = "basic"
	// ClientAuthBody sends them as client_id and client_secret in the form body.
	ClientAuthBody = "body"
)

// Auth is how a subscription's endpoint wants the sender to authenticate.
type Auth struct {
	Type string // AuthBasic or AuthOAuth2ClientCredentials

	// Basic.
	Username, Password string

	// OAuth 2 client credentials.
	TokenURL, ClientID, ClientSecret string
	Scopes                           []string
	Audience                         string // sent as the "audience" form parameter when not empty
	ClientAuth                       string // ClientAuthBasic (also when empty) or ClientAuthBody
}

// basicAuthorization is the Authorization value of HTTP Basic authentication.
func basicAuthorization(username, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(username+":"+password))
}

// The Authorization values the attempt shows: the scheme, never the credentials.
const (
	maskedBasic  = "Basic " + Masked
	maskedBearer = "Bearer " + Masked
)

// tokenConfigKey identifies everything a token was obtained with: the OAuth 2 configuration and the client
// certificate presented (a token may be bound to it, RFC 8705). A subscription whose configuration is
// edited gets a new key, so an old token is never sent for a new configuration.
func tokenConfigKey(a *Auth, cert *ClientCertificate) [sha256.Size]byte {
	h := sha256.New()
	field := func(h hash.Hash, s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	for _, s := range []string{a.Type, a.TokenURL, a.ClientID, a.ClientSecret, a.Audience, a.ClientAuth} {
		field(h, s)
	}
	fmt.Fprintf(h, "%d:", len(a.Scopes))
	for _, s := range a.Scopes {
		field(h, s)
	}
	if cert != nil {
		k := certKey(cert)
		h.Write(k[:])
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}
