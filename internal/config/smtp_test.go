package config

import (
	"strings"
	"testing"
)

// A malformed HOOKLINE_SMTP_URL stops the start with an error that says what is wrong, and never repeats
// the password.
func TestSMTPURLIsValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"http://mail.example.com:587?from=a@example.com", "scheme must be smtp or smtps"},
		{"smtp://:587?from=a@example.com", "host is missing"},
		{"smtp://mail.example.com?from=a@example.com", "port is missing"},
		{"smtp://mail.example.com:0?from=a@example.com", "port must be 1-65535"},
		{"smtp://mail.example.com:587", "from is missing"},
		{"smtp://mail.example.com:587?from=not-an-address", "not an email address"},
		{"smtp://mail.example.com:587?from=a@example.com&tls=require", "tls must be required"},
		{"smtp://mail.example.com:587?from=a@example.com&form=x", `unknown parameter "form"`},
		{"smtp://user:hunter2@mail.example.com?from=a@example.com", "port is missing"},
	} {
		_, err := Load(nil, env(map[string]string{"HOOKLINE_SMTP_URL": tc.url}))
		if err == nil || !strings.Contains(err.Error(), "HOOKLINE_SMTP_URL") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one about HOOKLINE_SMTP_URL saying %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error repeats the password: %v", tc.url, err)
		}
	}
	for _, ok := range []string{
		"smtp://mail.example.com:587?from=alerts@example.com",
		"smtp://user:p%40ss@mail.example.com:587?from=Hookline%20%3Calerts@example.com%3E&tls=required",
		"smtps://mail.example.com:465?from=alerts@example.com",
		"smtp://[::1]:25?from=alerts@example.com",
	} {
		c, err := Load(nil, env(map[string]string{"HOOKLINE_SMTP_URL": ok}))
		if err != nil || c.SMTPURL != ok {
			t.Errorf("%s: err = %v", ok, err)
		}
	}
}
