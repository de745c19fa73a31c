package eventtype

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValid(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "order.created", "Order_2:v1/x-y", strings.Repeat("a", 128)} {
		if !Valid(ok) {
			t.Errorf("Valid(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", ".a", "-a", "a b", "a\x00", "é", strings.Repeat("a", 129), "invoice.*"} {
		if Valid(bad) {
			t.Errorf("Valid(%q) = true", bad)
		}
	}
}
