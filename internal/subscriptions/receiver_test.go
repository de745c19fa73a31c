package subscriptions

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The token URL is refused at save when it plainly names an internal address, as an endpoint URL is (the
// sender checks every resolved address again when it asks for a token).
func TestTokenURLGuardedAtSave(t *testing.T) {
	t.Parallel()
	guarded := &Service{allowPrivate: false}
	open := &Service{allowPrivate: true}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data", "http://127.0.0.1:8080/token", "http://localhost/token",
		"http://[::ffff:10.0.0.1]/token", "http://10.1.2.3/oauth/token"} {
		a := &AuthInput{Type: AuthOAuth2, TokenURL: u, ClientID: "c"}
		err := guarded.validateAuth(a)
		if fe, ok := err.(*FieldError); !ok || fe.Field != "auth" || !strings.Contains(fe.Err.Message, "token_url") {
			t.Errorf("%s with the guard on: %v", u, err)
		}
		if err := open.validateAuth(a); err != nil {
			t.Errorf("%s with private networks allowed: %v", u, err)
		}
	}
}

func TestParseRetrySchedule(t *testing.T) {
	t.Parallel()
	got, err := parseRetrySchedule([]string{"1s", " 30s", "10m", "1h30m", "24h"})
	if err != nil || !slices.Equal(got, []int32{1, 30, 600, 5400, 86400}) {
		t.Fatalf("parse: %v, %v", got, err)
	}
	if text := RetryScheduleText(got); !slices.Equal(text, []string{"1s", "30s", "10m", "1h30m", "24h"}) {
		t.Errorf("text: %v", text)
	}
	for _, bad := range [][]string{nil, {}, {"0s"}, {"999ms"}, {"1500ms"}, {"24h1s"}, {"-5s"}, {"5"}, {""}, slices.Repeat([]string{"1s"}, 31)} {
		if _, err := parseRetrySchedule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		} else if fe, ok := err.(*FieldError); !ok || fe.Field != "retry_schedule" {
			t.Errorf("%q: %v is not a retry_schedule FieldError", bad, err)
		}
	}
	if got := FormatDelay(90 * time.Second); got != "1m30s" {
		t.Errorf("FormatDelay(90s) = %s", got)
	}
}
