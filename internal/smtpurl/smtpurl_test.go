package smtpurl

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	t.Parallel()
	c, err := Parse("smtp://us%40er:p%3Ass@mail.example.com:587?from=Hookline%20%3Calerts@example.com%3E&tls=required")
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "mail.example.com" || c.Port != 587 || c.Username != "us@er" || c.Password != "p:ss" || !c.RequireTLS ||
		c.ImplicitTLS || c.From != "Hookline <alerts@example.com>" {
		t.Errorf("%+v", c)
	}
	if strings.Contains(c.String(), "p:ss") || strings.Contains(c.String(), "p%3Ass") {
		t.Errorf("String shows the password: %s", c.String())
	}
	c, err = Parse("smtps://mail.example.com:465?from=alerts@example.com")
	if err != nil || !c.ImplicitTLS || c.Username != "" {
		t.Errorf("%+v %v", c, err)
	}
	if c, err := Configured(""); c != nil || err != nil {
		t.Errorf("empty: %v %v", c, err)
	}
	if _, err := Parse("smtp://u:hunter2@mail.example.com:587?from=a@example.com&tls=bogus"); err == nil ||
		strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v", err)
	}
}
