package delivery

import (
	"encoding/json"
	"fmt"
	"time"
)

// storedAuth is a subscription's auth column (its readable part; the secrets are in its credentials).
type storedAuth struct {
	Type       string   `json:"type"`
	Username   string   `json:"username"`
	TokenURL   string   `json:"token_url"`
	ClientID   string   `json:"client_id"`
	Scopes     []string `json:"scopes"`
	Audience   string   `json:"audience"`
	ClientAuth string   `json:"client_auth"`
}

// openReceiver builds what the sender authenticates with from a claimed subscription's auth, credentials
// (sealed values, opened with open) and client certificate. A value that does not open is an error: the
// attempts wait, as for an unreadable signing secret.
func openReceiver(open func(string) (string, error), rawAuth, rawCredentials []byte, certificate *string) (*Auth, *ClientCertificate, error) {
	var creds map[string]string
	if len(rawCredentials) > 0 {
		if err := json.Unmarshal(rawCredentials, &creds); err != nil {
			return nil, nil, fmt.Errorf("credentials: %w", err)
		}
	}
	secret := func(name string) (string, error) {
		v := creds[name]
		if v == "" {
			return "", nil
		}
		p, err := open(v)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return p, nil
	}
	var auth *Auth
	if len(rawAuth) > 0 {
		var a storedAuth
		if err := json.Unmarshal(rawAuth, &a); err != nil {
			return nil, nil, fmt.Errorf("auth: %w", err)
		}
		auth = &Auth{Type: a.Type, Username: a.Username, TokenURL: a.TokenURL, ClientID: a.ClientID,
			Scopes: a.Scopes, Audience: a.Audience, ClientAuth: a.ClientAuth}
		var err error
		switch a.Type {
		case AuthBasic:
			auth.Password, err = secret("password")
		case AuthOAuth2ClientCredentials:
			auth.ClientSecret, err = secret("client_secret")
		}
		if err != nil {
			return nil, nil, err
		}
	}
	var cert *ClientCertificate
	if certificate != nil {
		key, err := secret("private_key")
		if err != nil {
			return nil, nil, err
		}
		cert = &ClientCertificate{CertificatePEM: *certificate, PrivateKeyPEM: key}
	}
	return auth, cert, nil
}

// WithSchedule is the policy with a subscription's own delays (in seconds; nil keeps the policy): attempt
// n + 1 waits the n-th delay, with the usual jitter, and the delivery expires after the last (or at its
// deadline, whichever comes first).
func (p RetryPolicy) WithSchedule(seconds []int32) RetryPolicy {
	if len(seconds) == 0 {
		return p
	}
	p.Schedule = make([]time.Duration, len(seconds))
	for i, s := range seconds {
		p.Schedule[i] = time.Duration(s) * time.Second
	}
	p.MaxAttempts = len(seconds) + 1
	return p
}
