// Package config reads Hookline's configuration from the environment (docs/configuration.md lists it), with command-line
// flags mirroring each variable.
package config

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/smtpurl"
)

// Config is the whole configuration. Each field names its variable.
type Config struct {
	DatabaseURL           string        // DATABASE_URL
	Addr                  string        // HOOKLINE_ADDR
	AdminToken            string        // HOOKLINE_ADMIN_TOKEN
	AdminEmail            string        // HOOKLINE_ADMIN_EMAIL
	AdminPassword         string        // HOOKLINE_ADMIN_PASSWORD
	RetryBase             time.Duration // HOOKLINE_RETRY_BASE
	RetryMaxDelay         time.Duration // HOOKLINE_RETRY_MAX_DELAY
	RetryMaxAttempts      int           // HOOKLINE_RETRY_MAX_ATTEMPTS
	RetryWindow           time.Duration // HOOKLINE_RETRY_WINDOW
	AttemptTimeout        time.Duration // HOOKLINE_ATTEMPT_TIMEOUT
	AllowPrivateNetworks  bool          // HOOKLINE_ALLOW_PRIVATE_NETWORKS
	SenderCAFile          string        // HOOKLINE_SENDER_CA_FILE
	ResendPerMinute       int           // HOOKLINE_RESEND_PER_MINUTE
	MaxManualRetries      int           // HOOKLINE_MAX_MANUAL_RETRIES
	MaxSubscriptions      int           // HOOKLINE_MAX_SUBSCRIPTIONS_PER_TENANT: subscriptions one tenant may have
	RetentionDelivered    time.Duration // HOOKLINE_RETENTION_DELIVERED
	RetentionDead         time.Duration // HOOKLINE_RETENTION_DEAD
	RetentionActivity     time.Duration // HOOKLINE_RETENTION_ACTIVITY: activity log entries are deleted after this (0: kept)
	ArchiveDir            string        // HOOKLINE_ARCHIVE_DIR
	RetentionInterval     time.Duration // HOOKLINE_RETENTION_INTERVAL: pause between retention sweeps
	PartitionInterval     time.Duration // HOOKLINE_PARTITION_INTERVAL: the time span of one partition of the history
	AutoDisableAfter      time.Duration // HOOKLINE_AUTO_DISABLE_AFTER
	SMTPURL               string        // HOOKLINE_SMTP_URL
	OperatorWebhookURL    string        // HOOKLINE_OPERATOR_WEBHOOK_URL
	SecretKey             string        // HOOKLINE_SECRET_KEY: comma-separated base64 AES-256 keys, the first sealing
	EndpointConcurrency   int           // HOOKLINE_ENDPOINT_CONCURRENCY: attempts in flight per subscription, all processes
	BreakerThreshold      int           // HOOKLINE_BREAKER_THRESHOLD: consecutive transient failures that open a circuit
	BreakerProbeInterval  time.Duration // HOOKLINE_BREAKER_PROBE_INTERVAL: first wait before an open circuit's probe
	IncidentAfter         time.Duration // HOOKLINE_INCIDENT_AFTER: only failures this long make an incident
	OperatorWebhookSecret string        // HOOKLINE_OPERATOR_WEBHOOK_SECRET: whsec_ secret signing operator notifications
	PublicURL             string        // HOOKLINE_PUBLIC_URL: base of dashboard links; https makes cookies Secure
	MetricsAddr           string        // HOOKLINE_METRICS_ADDR: serve /metrics there instead of on HOOKLINE_ADDR
	TrustedProxies        string        // HOOKLINE_TRUSTED_PROXIES: CIDRs whose X-Forwarded-For/-Proto are believed
	Workers               int           // HOOKLINE_WORKERS: concurrent attempts per process
	LogFormat             string        // HOOKLINE_LOG_FORMAT: json (default) or text
	Demo                  bool          // HOOKLINE_DEMO: seed a demo tenant and run the demo receiver
	DataDir               string        // HOOKLINE_DATA_DIR: where the project-managed PostgreSQL lives
	DemoReceiverAddr      string        // HOOKLINE_DEMO_RECEIVER_ADDR: the demo receiver's loopback ip:port
	APIRatePerSecond      float64       // HOOKLINE_API_RATE_PER_SECOND: API requests per tenant token per second, per process (0: no limit)
	APIBurst              int           // HOOKLINE_API_BURST: requests a tenant token may send at once (0: twice the rate)
	APIRateWait           time.Duration // HOOKLINE_API_RATE_WAIT: how long a request over its token's rate is held for its turn before 429
	RetentionRate         float64       // HOOKLINE_RETENTION_RATE: deliveries the retention sweep deletes per second (0: unpaced)
	PortalFrameAncestors  string        // HOOKLINE_PORTAL_FRAME_ANCESTORS: origins allowed to frame the dashboard
	BrandName             string        // HOOKLINE_BRAND_NAME
	BrandLogo             string        // HOOKLINE_BRAND_LOGO: path of a PNG or SVG file
	BrandColor            string        // HOOKLINE_BRAND_COLOR: #rrggbb accent
	EventTypes            string        // HOOKLINE_EVENT_TYPES: any (default) or registered (only the catalogue's types)

	// Command is the command named after the flags: "" (serve), CommandMigrate or CommandReencrypt.
	Command string
}

// HOOKLINE_EVENT_TYPES's values.
const (
	// EventTypesAny accepts events of any well-formed type; the catalogue's schemas still apply to theirs.
	EventTypesAny = "any"
	// EventTypesRegistered accepts only the catalogue's types (not archived).
	EventTypesRegistered = "registered"
)

// Commands of the server binary.
const (
	CommandMigrate   = "migrate"
	CommandReencrypt = "reencrypt"
)

type field struct {
	env, help, def string
	set            func(string) error
}

// Load reads the environment and then args (flags override variables). It returns flag.ErrHelp for -h.
func Load(args []string, getenv func(string) string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	if flagOutput != nil {
		fs.SetOutput(flagOutput)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: server [flags] [migrate|reencrypt]\n       server version\n       server healthcheck [URL]\n\n  (no command)  migrate, then serve API, dashboard, metrics and workers\n  migrate       only migrate the database, then exit\n  reencrypt     migrate, re-encrypt every signing secret and custom header under the first HOOKLINE_SECRET_KEY key (so older keys can be dropped), then exit\n  version       print the version, commit and Go version of this build (also -version), then exit\n  healthcheck   exit 0 if the server on HOOKLINE_ADDR (or URL) answers 200 on /readyz, else 1 (a container health check)\n\nEvery flag mirrors an environment variable; flags win.\n\n")
		fs.PrintDefaults()
	}
	for _, f := range fields(&c) {
		if err := f.set(f.def); err != nil {
			return c, err
		}
		if v := getenv(f.env); v != "" {
			if err := f.set(v); err != nil {
				return c, fmt.Errorf("%s: %w", f.env, err)
			}
		}
		fs.Func(flagName(f.env), f.help+" ("+f.env+")", f.set)
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 1 || (fs.NArg() == 1 && fs.Arg(0) != CommandMigrate && fs.Arg(0) != CommandReencrypt) {
		return c, fmt.Errorf("unknown command %q; the commands are migrate and reencrypt", fs.Arg(0))
	}
	c.Command = fs.Arg(0)
	if err := c.checkSettings(); err != nil {
		return c, err
	}
	if c.APIBurst == 0 {
		c.APIBurst = DefaultBurst(c.APIRatePerSecond)
	}
	return c, c.checkWeb()
}

// Setters of a field from its text.

func str(p *string) func(string) error { return func(v string) error { *p = v; return nil } }

func dur(p *time.Duration) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("not a Go duration such as 5s or 6h: %q", v)
		}
		*p = d
		return nil
	}
}

func num(p *int, lo int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo {
			return fmt.Errorf("not a whole number of at least %d: %q", lo, v)
		}
		*p = n
		return nil
	}
}

func rate(p *float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("not a number of at least 0 (per second, fractions allowed): %q", v)
		}
		*p = f
		return nil
	}
}

func boolean(p *bool) func(string) error {
	return func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("not true or false: %q", v)
		}
		*p = b
		return nil
	}
}

// fields are the variables, each with its help, its default and where it goes in c.
func fields(c *Config) []field {
	return []field{
		{"DATABASE_URL", "PostgreSQL URL; empty: a project-managed PostgreSQL under ./.data/", "", str(&c.DatabaseURL)},
		{"HOOKLINE_ADDR", "listen address (dashboard, API, metrics)", ":8080", str(&c.Addr)},
		{"HOOKLINE_ADMIN_TOKEN", "bearer token with the admin scope", "", str(&c.AdminToken)},
		{"HOOKLINE_ADMIN_EMAIL", "admin dashboard user, created or updated at start", "", str(&c.AdminEmail)},
		{"HOOKLINE_ADMIN_PASSWORD", "that user's password", "", str(&c.AdminPassword)},
		{"HOOKLINE_RETRY_BASE", "first retry delay; later ones double, with jitter", "5s", dur(&c.RetryBase)},
		{"HOOKLINE_RETRY_MAX_DELAY", "cap on one retry delay", "6h", dur(&c.RetryMaxDelay)},
		{"HOOKLINE_RETRY_MAX_ATTEMPTS", "attempts before a delivery expires", "24", num(&c.RetryMaxAttempts, 1)},
		{"HOOKLINE_RETRY_WINDOW", "give_up_at = created (or retried) + window", "72h", dur(&c.RetryWindow)},
		{"HOOKLINE_ATTEMPT_TIMEOUT", "whole-request timeout of one attempt", "15s", dur(&c.AttemptTimeout)},
		{"HOOKLINE_ALLOW_PRIVATE_NETWORKS", "deliver to loopback/private/link-local addresses", "false", boolean(&c.AllowPrivateNetworks)},
		{"HOOKLINE_SENDER_CA_FILE", "PEM file of certificate authorities the sender trusts besides the system's (receivers and OAuth 2 token endpoints with a private CA)", "", str(&c.SenderCAFile)},
		{"HOOKLINE_RESEND_PER_MINUTE", "manual resends per subscription per minute", "100", num(&c.ResendPerMinute, 1)},
		{"HOOKLINE_MAX_MANUAL_RETRIES", "manual retries of one delivery by a tenant", "3", num(&c.MaxManualRetries, 0)},
		{"HOOKLINE_MAX_SUBSCRIPTIONS_PER_TENANT", "subscriptions one tenant may have (API and dashboard)", "100", num(&c.MaxSubscriptions, 1)},
		{"HOOKLINE_RETENTION_DELIVERED", "delivered deliveries are deleted after this", "720h", dur(&c.RetentionDelivered)},
		{"HOOKLINE_RETENTION_DEAD", "dead deliveries are deleted after this", "2160h", dur(&c.RetentionDead)},
		{"HOOKLINE_RETENTION_ACTIVITY", "activity log entries are deleted after this (0: keep them)", "8760h", dur(&c.RetentionActivity)},
		{"HOOKLINE_ARCHIVE_DIR", "archive dead deliveries there before deletion", "", str(&c.ArchiveDir)},
		{"HOOKLINE_RETENTION_INTERVAL", "pause between retention sweeps (on the maintenance leader)", "1m", dur(&c.RetentionInterval)},
		{"HOOKLINE_PARTITION_INTERVAL", "the time span of one partition of the delivery history (1h to 168h)", "24h", dur(&c.PartitionInterval)},
		{"HOOKLINE_AUTO_DISABLE_AFTER", "disable a subscription failing this long", "24h", dur(&c.AutoDisableAfter)},
		{"HOOKLINE_SMTP_URL", "smtp://[user:pass@]host:port?from=...[&tls=required] (or smtps://) for customer alert emails", "", str(&c.SMTPURL)},
		{"HOOKLINE_OPERATOR_WEBHOOK_URL", "operator notifications as signed webhooks", "", str(&c.OperatorWebhookURL)},
		{"HOOKLINE_SECRET_KEY", "keys that encrypt signing secrets and custom headers at rest (AES-256-GCM): base64 of 32 random bytes, several comma-separated for rotation (the first encrypts, all decrypt)", "", str(&c.SecretKey)},
		{"HOOKLINE_ENDPOINT_CONCURRENCY", "most attempts in flight to one subscription, across all processes", "10", num(&c.EndpointConcurrency, 1)},
		{"HOOKLINE_BREAKER_THRESHOLD", "consecutive transient failures that open a subscription's circuit", "10", num(&c.BreakerThreshold, 1)},
		{"HOOKLINE_BREAKER_PROBE_INTERVAL", "wait before an open circuit's probe; doubles after each failed probe", "30s", dur(&c.BreakerProbeInterval)},
		{"HOOKLINE_INCIDENT_AFTER", "only failures for this long open an incident", "1h", dur(&c.IncidentAfter)},
		{"HOOKLINE_OPERATOR_WEBHOOK_SECRET", "whsec_ secret that signs operator notifications", "", str(&c.OperatorWebhookSecret)},
		{"HOOKLINE_PUBLIC_URL", "public base URL of the dashboard (default http:// + the listen address)", "", str(&c.PublicURL)},
		{"HOOKLINE_METRICS_ADDR", "serve /metrics on this address instead of the main one", "", str(&c.MetricsAddr)},
		{"HOOKLINE_TRUSTED_PROXIES", "comma-separated CIDRs of reverse proxies whose X-Forwarded-* headers are believed", "", str(&c.TrustedProxies)},
		{"HOOKLINE_WORKERS", "concurrent delivery attempts in this process", "512", num(&c.Workers, 1)},
		{"HOOKLINE_LOG_FORMAT", "json or text", "json", str(&c.LogFormat)},
		{"HOOKLINE_DEMO", "seed a demo tenant with a built-in demo receiver and a trickle of events", "false", boolean(&c.Demo)},
		{"HOOKLINE_DATA_DIR", "directory of the project-managed PostgreSQL (when DATABASE_URL is empty)", ".data", str(&c.DataDir)},
		{"HOOKLINE_DEMO_RECEIVER_ADDR", "loopback ip:port of the demo receiver (with HOOKLINE_DEMO)", "127.0.0.1:8081", str(&c.DemoReceiverAddr)},
		{"HOOKLINE_API_RATE_PER_SECOND", "API requests per second per tenant token, in each process (0: no limit; the admin token is never limited)", "0", rate(&c.APIRatePerSecond)},
		{"HOOKLINE_API_BURST", "API requests a tenant token may send at once before the rate applies (0: twice the rate)", "0", num(&c.APIBurst, 0)},
		{"HOOKLINE_API_RATE_WAIT", "how long a tenant token's request over its rate is held for its turn before it is refused with 429 (0: refused at once)", "1s", dur(&c.APIRateWait)},
		{"HOOKLINE_RETENTION_RATE", "deliveries the retention sweep deletes per second at most, in this process (0: unpaced beyond its pause after each batch)", "250", rate(&c.RetentionRate)},
		{"HOOKLINE_PORTAL_FRAME_ANCESTORS", "space-separated origins (https://app.example.com) allowed to show the dashboard in an iframe; needs an https HOOKLINE_PUBLIC_URL", "", str(&c.PortalFrameAncestors)},
		{"HOOKLINE_BRAND_NAME", "the platform's name on pages and emails", brand.DefaultName, str(&c.BrandName)},
		{"HOOKLINE_BRAND_LOGO", "path of the platform's logo, a PNG or SVG file of at most 256 KiB", "", str(&c.BrandLogo)},
		{"HOOKLINE_BRAND_COLOR", "the platform's accent colour, #rrggbb, shaded for WCAG AA contrast", "", str(&c.BrandColor)},
		{"HOOKLINE_EVENT_TYPES", "any: events of any type are accepted; registered: only types in the event catalogue (and subscriptions may name only those)", EventTypesAny, str(&c.EventTypes)},
	}
}

// checkSettings refuses a malformed key, URL or choice at start.
func (c *Config) checkSettings() error {
	// Parsed here only to refuse a malformed key at start; the server parses it again where it is used.
	if _, err := secretbox.Parse(c.SecretKey); err != nil {
		return fmt.Errorf("HOOKLINE_SECRET_KEY: %w", err)
	}
	if c.Command == CommandReencrypt && c.SecretKey == "" {
		return fmt.Errorf("reencrypt needs HOOKLINE_SECRET_KEY: it re-encrypts every stored secret under its first key")
	}
	if c.SenderCAFile != "" {
		if _, err := SenderRoots(c.SenderCAFile); err != nil {
			return err
		}
	}
	if c.DatabaseURL != "" {
		if _, err := url.Parse(c.DatabaseURL); err != nil {
			return fmt.Errorf("DATABASE_URL: %w", urlError(err))
		}
	}
	if c.RetentionInterval <= 0 {
		return fmt.Errorf("HOOKLINE_RETENTION_INTERVAL must be more than zero")
	}
	if c.PartitionInterval < time.Hour || c.PartitionInterval > 7*24*time.Hour {
		return fmt.Errorf("HOOKLINE_PARTITION_INTERVAL must be from 1h to 168h (7 days)")
	}
	if c.OperatorWebhookURL != "" {
		if u, err := url.Parse(c.OperatorWebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("HOOKLINE_OPERATOR_WEBHOOK_URL must be an absolute http:// or https:// URL")
		}
		if !strings.HasPrefix(c.OperatorWebhookSecret, "whsec_") {
			return fmt.Errorf("HOOKLINE_OPERATOR_WEBHOOK_SECRET must be set to a whsec_ secret with HOOKLINE_OPERATOR_WEBHOOK_URL")
		}
	}
	if c.SMTPURL != "" {
		// Parsed here only to refuse a malformed URL at start; the server parses it again where it is used.
		if _, err := smtpurl.Parse(c.SMTPURL); err != nil {
			return fmt.Errorf("HOOKLINE_SMTP_URL: %w", err)
		}
	}
	if c.EventTypes != EventTypesAny && c.EventTypes != EventTypesRegistered {
		return fmt.Errorf("HOOKLINE_EVENT_TYPES must be %s or %s, not %q", EventTypesAny, EventTypesRegistered, c.EventTypes)
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		return fmt.Errorf("HOOKLINE_LOG_FORMAT must be json or text")
	}
	return nil
}

// checkWeb refuses a bad public URL, proxy list, demo receiver address, frame ancestors or brand at start.
func (c *Config) checkWeb() error {
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return fmt.Errorf("HOOKLINE_PUBLIC_URL must be an absolute http:// or https:// URL without a user or password, such as https://hooks.example.com: %q", httpx.RedactURL(c.PublicURL))
		}
	}
	if _, err := ParseTrustedProxies(c.TrustedProxies); err != nil {
		return fmt.Errorf("HOOKLINE_TRUSTED_PROXIES: %w", err)
	}
	if c.Demo {
		if err := checkLoopback(c.DemoReceiverAddr); err != nil {
			return fmt.Errorf("HOOKLINE_DEMO_RECEIVER_ADDR: %w", err)
		}
	}
	origins, err := ParseFrameAncestors(c.PortalFrameAncestors)
	if err != nil {
		return fmt.Errorf("HOOKLINE_PORTAL_FRAME_ANCESTORS: %w", err)
	}
	// A framed dashboard's session cookie must be SameSite=None, which browsers accept only when Secure:
	// over plain http the portal could never keep its session inside another site's frame.
	if len(origins) > 0 && !strings.HasPrefix(strings.ToLower(c.PublicURL), "https://") {
		return fmt.Errorf("HOOKLINE_PORTAL_FRAME_ANCESTORS needs an https HOOKLINE_PUBLIC_URL (now %q): "+
			"a dashboard inside another site's frame keeps its session only in a SameSite=None; Secure cookie, "+
			"which browsers send only over https", httpx.RedactURL(c.PublicURL))
	}
	// Read here (the logo file too) to refuse a bad brand at start; the server loads it again where it is used.
	if _, err := brand.Load(c.BrandName, c.BrandLogo, c.BrandColor); err != nil {
		return err
	}
	return nil
}

// urlError is a url.Parse error without the URL it quotes, which may hold a password.
func urlError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("not a URL: %w", ue.Err)
	}
	return err
}

// ParseFrameAncestors reads HOOKLINE_PORTAL_FRAME_ANCESTORS: space-separated origins, each a scheme
// (http or https), a host and an optional port, nothing else (no path, wildcard, query or user).
func ParseFrameAncestors(s string) ([]string, error) {
	var out []string
	for _, o := range strings.Fields(s) {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.Contains(u.Host, "*") ||
			strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#") {
			return nil, fmt.Errorf("%q is not an origin such as https://app.example.com or https://app.example.com:8443", o)
		}
		if u.Port() != "" {
			if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("%q has a bad port", o)
			}
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return out, nil
}

// ParseTrustedProxies reads HOOKLINE_TRUSTED_PROXIES: comma-separated CIDRs such as 10.0.0.0/8 or
// fd00::/8; a bare address means that address alone. Empty trusts no proxy.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("not a CIDR such as 10.0.0.0/8 or an IP address: %q", part)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("not a CIDR such as 10.0.0.0/8 or an IP address: %q", part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// DefaultBurst is HOOKLINE_API_BURST's default: twice the rate, and at least 1.
func DefaultBurst(perSecond float64) int {
	return max(int(math.Ceil(2*perSecond)), 1)
}

// checkLoopback accepts a loopback ip:port only: the SSRF guard lets the sender through to that exact
// address and no other, and the receiver serves this process alone.
func checkLoopback(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("must be a loopback ip:port such as 127.0.0.1:8081 or [::1]:8081: %q", addr)
	}
	return nil
}

// MigrateOnly reports whether args ask for `server migrate`.
func MigrateOnly(args []string) bool {
	return len(args) > 0 && args[len(args)-1] == CommandMigrate
}

// flagName turns HOOKLINE_RETRY_BASE into retry-base and DATABASE_URL into database-url.
func flagName(env string) string {
	out := []byte{}
	name := env
	if len(name) > 9 && name[:9] == "HOOKLINE_" {
		name = name[9:]
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_':
			out = append(out, '-')
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

// flagOutput redirects usage output in tests.
var flagOutput io.Writer

// SenderRoots is the pool the sender verifies receivers and token endpoints with: the system's roots and the
// certificates of HOOKLINE_SENDER_CA_FILE (nil for the system's alone when file is empty).
func SenderRoots(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("HOOKLINE_SENDER_CA_FILE: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("HOOKLINE_SENDER_CA_FILE: %s holds no PEM certificate", file)
	}
	return pool, nil
}
