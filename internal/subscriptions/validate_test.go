package subscriptions

import (
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/fault"
)

func TestValidateURL(t *testing.T) {
	t.Parallel()
	guarded := &Service{allowPrivate: false}
	open := &Service{allowPrivate: true}
	cases := []struct {
		url           string
		guarded, open bool // accepted with the SSRF guard on, and with private networks allowed
	}{
		{"https://example.com/hook", true, true},
		{"http://example.com:8080/a?b=c", true, true},
		{"HTTPS://EXAMPLE.COM/", true, true},
		{"https://93.184.216.34/hook", true, true},
		{"https://[2606:2800:220:1:248:1893:25c8:1946]/", true, true},
		{"", false, false},
		{"example.com/hook", false, false},
		{"/hook", false, false},
		{"ftp://example.com/", false, false},
		{"javascript:alert(1)", false, false},
		{"file:///etc/passwd", false, false},
		{"https://", false, false},
		{"https://:443/", false, false},
		{"http://[::1", false, false},
		{"https://user:pass@example.com/", false, false},
		{"https://user@example.com/", false, false},
		{"https://example.com/#frag", false, false},
		{"https://example.com/" + strings.Repeat("a", 2048), false, false},
		{"http://localhost/", false, true},
		{"http://LOCALHOST:8080/", false, true},
		{"http://api.localhost/", false, true},
		{"http://127.0.0.1/", false, true},
		{"http://127.1.2.3:9000/", false, true},
		{"http://10.0.0.1/", false, true},
		{"http://172.16.5.4/", false, true},
		{"http://192.168.1.1/", false, true},
		{"http://169.254.169.254/latest/meta-data/", false, true},
		{"http://0.0.0.0/", false, true},
		{"http://[::1]/", false, true},
		{"http://[fe80::1]/", false, true},
		{"http://[fc00::1]/", false, true},
		{"http://[::ffff:127.0.0.1]/", false, true},
	}
	for _, c := range cases {
		for _, s := range []struct {
			svc  *Service
			want bool
			name string
		}{{guarded, c.guarded, "guarded"}, {open, c.open, "allowPrivate"}} {
			err := s.svc.ValidateURL(c.url)
			if (err == nil) != s.want {
				t.Errorf("%s ValidateURL(%q) = %v, want accepted=%v", s.name, c.url, err, s.want)
			}
			if err != nil && !fault.Is(err, fault.InvalidRequest) {
				t.Errorf("ValidateURL(%q): %v is not INVALID_REQUEST", c.url, err)
			}
			// A URL refused only by the SSRF guard says how an operator allows it, and that it is for
			// development.
			if err != nil && !c.guarded && c.open {
				if msg := fault.As(err).Message; !strings.Contains(msg, "HOOKLINE_ALLOW_PRIVATE_NETWORKS=true") || !strings.Contains(msg, "for development only") {
					t.Errorf("ValidateURL(%q) = %q, which does not say how to allow it", c.url, msg)
				}
			}
		}
	}
}

func TestValidateHeaders(t *testing.T) {
	t.Parallel()
	ok := []map[string]string{
		nil, {}, {"X-Api-Key": "k"}, {"authorization": "Bearer x"}, {"X-Empty": ""}, {"X-Tab": "a\tb"},
		{"X-Long": strings.Repeat("v", 1024)},
	}
	for _, h := range ok {
		if err := validateHeaders(h); err != nil {
			t.Errorf("validateHeaders(%v) = %v", h, err)
		}
	}
	bad := []map[string]string{
		{"Content-Type": "x"}, {"content-length": "1"}, {"User-Agent": "x"}, {"Host": "x"}, {"Connection": "close"},
		{"Transfer-Encoding": "chunked"}, {"TE": "x"}, {"Upgrade": "x"}, {"Trailer": "x"}, {"Keep-Alive": "x"},
		{"Proxy-Authorization": "x"}, {"Expect": "100-continue"},
		{"Webhook-Id": "x"}, {"webhook-signature": "x"}, {"WEBHOOK-TIMESTAMP": "1"}, {"webhook-anything": "x"},
		{"": "x"}, {"X A": "x"}, {"X:A": "x"}, {"X(A)": "x"}, {"X-\u00e9": "x"}, {"X\n": "x"},
		{"X-A": "a\r\nB: c"}, {"X-A": "a\nb"}, {"X-A": "a\x00b"}, {"X-A": strings.Repeat("v", 1025)},
		// control characters Go's client refuses to send, and invalid UTF-8: every attempt would fail
		{"X-A": "a\x01b"}, {"X-A": "a\x7fb"}, {"X-A": "\x1b[31m"}, {"X-A": "a\xffb"},
	}
	for _, h := range bad {
		if err := validateHeaders(h); !fault.Is(err, fault.InvalidRequest) {
			t.Errorf("validateHeaders(%q) = %v, want INVALID_REQUEST", h, err)
		}
	}
	many := map[string]string{}
	for i := range 21 {
		many["X-H"+strings.Repeat("a", i)] = "v"
	}
	if err := validateHeaders(many); err == nil {
		t.Error("21 custom headers accepted")
	}
}

func TestValidateInput(t *testing.T) {
	t.Parallel()
	s := &Service{allowPrivate: false}
	str := func(v string) *string { return &v }
	num := func(v int) *int { return &v }
	types := func(v ...string) *[]string { return &v }
	good := []Input{
		{}, {URL: str("https://example.com/")}, {EventTypes: types()}, {EventTypes: types("a.b", "c:d/e-f_g")},
		{EventTypes: types("invoice.*", "invoice.paid", "customer.address.*", "a_b-c:d/e.*")},
		{Description: str(strings.Repeat("d", 500))}, {RateLimitPerSecond: num(1)}, {RateLimitPerSecond: num(10000)},
	}
	for _, in := range good {
		if err := s.validate(in); err != nil {
			t.Errorf("validate(%+v) = %v", in, err)
		}
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = "t"
	}
	bad := []Input{
		{URL: str("http://127.0.0.1/")}, {EventTypes: types("")}, {EventTypes: types("a b")}, {EventTypes: types(".a")},
		{EventTypes: &many}, {Description: str(strings.Repeat("d", 501))}, {Description: str("a\x00b")},
		{Description: str("\xff")}, {RateLimitPerSecond: num(-1)}, {RateLimitPerSecond: num(0)}, {RateLimitPerSecond: num(10001)},
		{Headers: &map[string]string{"Host": "x"}},
		// Patterns: only a trailing .* after a valid prefix; "*" alone is the empty list.
		{EventTypes: types("*")}, {EventTypes: types(".*")}, {EventTypes: types("invoice*")}, {EventTypes: types("invoice.*.paid")},
		{EventTypes: types("*.paid")}, {EventTypes: types("invoice..*")}, {EventTypes: types("invoice.*.*")}, {EventTypes: types("inv oice.*")},
		{EventTypes: types("invoice.%")}, {EventTypes: types("-x.*")},
	}
	for _, in := range bad {
		if err := s.validate(in); !fault.Is(err, fault.InvalidRequest) {
			t.Errorf("validate(%+v) = %v, want INVALID_REQUEST", in, err)
		}
	}
}

// With KnownEventType set (HOOKLINE_EVENT_TYPES=registered), every exact type and pattern is asked about
// as written, and one it does not know refuses the whole list, saying which and why.
func TestValidateEventTypesAgainstTheCatalogue(t *testing.T) {
	t.Parallel()
	var asked []string
	s := &Service{KnownEventType: func(t string) bool {
		asked = append(asked, t)
		return t == "invoice.paid" || t == "invoice.*"
	}}
	if err := s.validateEventTypes([]string{"invoice.paid", "invoice.*"}); err != nil {
		t.Errorf("known types refused: %v", err)
	}
	if strings.Join(asked, " ") != "invoice.paid invoice.*" {
		t.Errorf("asked about %v", asked)
	}
	for typ, want := range map[string]string{
		"order.created": `event type "order.created" is not in the event catalogue`,
		"order.*":       `event type pattern "order.*" covers no type of the event catalogue`,
	} {
		err := s.validateEventTypes([]string{"invoice.paid", typ})
		if fe := fault.As(err); fe == nil || fe.Code != fault.InvalidRequest || !strings.Contains(fe.Message, want) {
			t.Errorf("%s: %v, want INVALID_REQUEST saying %q", typ, err, want)
		}
	}
	// Malformed types are refused for their form first, without asking the catalogue.
	asked = nil
	if err := s.validateEventTypes([]string{"bad type"}); err == nil || len(asked) != 0 {
		t.Errorf("malformed type: %v, asked %v", err, asked)
	}
	// Without the hook (HOOKLINE_EVENT_TYPES=any), any well-formed type goes.
	if err := (&Service{}).validateEventTypes([]string{"order.created", "order.*"}); err != nil {
		t.Errorf("any mode: %v", err)
	}
}
