package tenants

import (
	"os"
	"regexp"
	"testing"
)

// What the documentation says of a revoked token is what the code does (TestRevokedEverywhereAtOnce): every
// process refuses it once the revocation answers. No page may still give the other processes the 2 s the
// token cache once left them.
func TestDocsSayARevokedTokenStopsEverywhereAtOnce(t *testing.T) {
	t.Parallel()
	stale := regexp.MustCompile(`(?is)revoked[^.]{0,120}(keeps working|stops working in the others|works for up to)`)
	for _, file := range []string{"../../README.md", "../../SECURITY.md", "../../api/openapi.yaml",
		"../../docs/contract.md", "../../docs/scaling.md", "../../docs/operations.md", "../../docs/architecture.md"} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range stale.FindAll(text, -1) {
			t.Errorf("%s says a revoked token still works somewhere: %q", file, m)
		}
	}
}
