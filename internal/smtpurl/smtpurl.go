// Package smtpurl reads HOOKLINE_SMTP_URL, the mail server for customer alert emails: a leaf that the
// configuration checks at start and the notifier sends through, so that config needs nothing above it.
package smtpurl

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
)

// SMTP is a parsed HOOKLINE_SMTP_URL: smtp://[user:pass@]host:port?from=...[&tls=required], or smtps://
// for implicit TLS.
type SMTP struct {
	Host string
	Port int
	// ImplicitTLS: smtps://, TLS from the first byte (usually port 465).
	ImplicitTLS bool
	// RequireTLS: smtp:// with tls=required refuses to send unless STARTTLS succeeds. Without it STARTTLS
	// is used when the server offers it and the message goes in clear otherwise (the contract's default:
	// many internal relays speak plain SMTP).
	RequireTLS bool
	// Username and Password authenticate (the best mechanism the server offers); no user, no auth.
	Username, Password string
	// From is the sender address, as given (it may carry a display name).
	From string
}

// Parse reads and checks HOOKLINE_SMTP_URL. Its errors never repeat the password.
func Parse(s string) (*SMTP, error) {
	const form = "expected smtp://[user:pass@]host:port?from=alerts@example.com (or smtps:// for implicit TLS)"
	u, err := url.Parse(s)
	if err != nil {
		// url's error quotes the whole URL, password included.
		return nil, fmt.Errorf("not a URL; %s", form)
	}
	c := &SMTP{}
	switch u.Scheme {
	case "smtp":
	case "smtps":
		c.ImplicitTLS = true
	default:
		return nil, fmt.Errorf("scheme must be smtp or smtps, not %q; %s", u.Scheme, form)
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("missing // after the scheme; %s", form)
	}
	c.Host = u.Hostname()
	if c.Host == "" {
		return nil, fmt.Errorf("host is missing; %s", form)
	}
	if u.Port() == "" {
		return nil, fmt.Errorf("port is missing (usually 587 for smtp://, 465 for smtps://); %s", form)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("port must be 1-65535, not %q", u.Port())
	}
	c.Port = port
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("unexpected path %q; %s", u.Path, form)
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
		if c.Username == "" {
			return nil, errors.New("a password without a user name; write smtp://user:pass@host:port (percent-encode @ : / in them)")
		}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("malformed query: %w", err)
	}
	for k, v := range q {
		if len(v) != 1 {
			return nil, fmt.Errorf("%s is given %d times", k, len(v))
		}
		switch k {
		case "from":
			c.From = strings.TrimSpace(v[0])
		case "tls":
			switch v[0] {
			case "required":
				c.RequireTLS = true
			case "opportunistic":
				if c.ImplicitTLS {
					return nil, errors.New("tls=opportunistic does not apply to smtps://, which is always TLS")
				}
			default:
				return nil, fmt.Errorf("tls must be required (or opportunistic, the default for smtp://), not %q", v[0])
			}
		default:
			// A typo (say tls=require or form=) must not be silently ignored.
			return nil, fmt.Errorf("unknown parameter %q; the parameters are from and tls", k)
		}
	}
	if c.From == "" {
		return nil, fmt.Errorf("from is missing: the sender address, e.g. ?from=alerts@example.com; %s", form)
	}
	if _, err := mail.ParseAddress(c.From); err != nil {
		return nil, fmt.Errorf("from %q is not an email address: %w", c.From, err)
	}
	return c, nil
}

// String is the URL without its password, for logs.
func (c *SMTP) String() string {
	u := url.URL{Scheme: "smtp", Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port))}
	if c.ImplicitTLS {
		u.Scheme = "smtps"
	}
	if c.Username != "" {
		u.User = url.User(c.Username)
	}
	q := url.Values{"from": {c.From}}
	if c.RequireTLS {
		q.Set("tls", "required")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Configured parses HOOKLINE_SMTP_URL when it is set; empty gives nil (no mail server).
func Configured(s string) (*SMTP, error) {
	if s == "" {
		return nil, nil
	}
	return Parse(s)
}
