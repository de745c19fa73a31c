package server_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The leaves (configuration, names and their syntax, sealed secrets, errors) import none of the packages
// built on them: config once imported the notifier for its SMTP URL, and through it incidents,
// subscriptions and the engine; the catalogue imported the engine for one regular expression.
func TestLeavesImportOnlyLeaves(t *testing.T) {
	t.Parallel()
	const module = "github.com/hookline/hookline/internal/"
	leaves := []string{"bounded", "brand", "config", "eventtype", "fault", "httpx", "secretbox", "service", "sleep", "smtpurl"}
	above := map[string][]string{ // packages that may import the leaves but not the engine
		"catalogue": {"catalogue/schema", "db"},
	}
	check := func(pkg string, allowed []string) {
		args := []string{"list", "-deps", "-f", "{{.ImportPath}}", "../" + pkg}
		out, err := exec.Command("go", args...).Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		for _, dep := range strings.Fields(string(out)) {
			name, ok := strings.CutPrefix(dep, module)
			if !ok || name == pkg {
				continue
			}
			if !slices.Contains(leaves, name) && !slices.Contains(allowed, name) {
				t.Errorf("%s imports %s, which is not a leaf", pkg, name)
			}
		}
	}
	for _, leaf := range leaves {
		check(leaf, nil)
	}
	for pkg, allowed := range above {
		check(pkg, allowed)
	}
}
