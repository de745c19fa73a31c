package api_test

import (
	"context"
	"strings"
	"testing"
)

// POST /tenants/{t}/users: a password is counted in characters (up to bcrypt's 72 bytes), is text a person
// can type into the sign-in form (no NUL or other control character, no invalid UTF-8), is not only
// spaces and is not easy to guess; each refusal is a 400 INVALID_REQUEST in the contract's shape saying
// which rule it broke, and nothing is created. An accepted password signs in.
func TestCreateUserPasswordRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("passwords")
	path := "/tenants/" + tn + "/users"
	n := 0
	body := func(password string) string {
		n++
		return `{"email":"pw-` + strings.Repeat("x", n) + `@example.com","password":"` + password + `"}`
	}
	for _, c := range []struct{ what, password, says string }{
		{"NUL", `amber walrus\u0000canoe`, "control characters"},
		{"tab", `amber\twalrus canoe`, "control characters"},
		{"newline", `amber walrus canoe\n`, "control characters"},
		{"C1 control", `amber walrus\u0085canoe`, "control characters"},
		{"invalid UTF-8", "amber walrus \xff canoe", "valid UTF-8"},
		{"lone surrogate", `amber walrus \ud800 canoe`, "valid UTF-8"},
		{"five 2-byte letters (10 bytes)", "ébène", "at least 10 characters; it has 5"},
		{"nine characters", "zq8-Lw3rP", "at least 10 characters; it has 9"},
		{"73 bytes", strings.Repeat("zq8-Lw3r-", 8) + "x", "at most 72 bytes"},
		{"37 two-byte letters (74 bytes)", strings.Repeat("ü", 37), "at most 72 bytes"},
		{"ten spaces", strings.Repeat(" ", 10), "only spaces"},
		{"other spaces", `\u3000\u00a0\u2003 \u2003\u00a0\u3000 \u2003\u3000`, "only spaces"},
		{"password12", "password12", "too easy to guess"},
		{"Password123!", "Password123!", "too easy to guess"},
		{"a sequence", "0123456789", "too easy to guess"},
		{"a keyboard walk", "qwertyuiop", "too easy to guess"},
		{"the service's name", "hookline2024", "too easy to guess"},
	} {
		r := e.call("POST", path, adminToken, body(c.password))
		if got := wantError(t, c.what, r, "INVALID_REQUEST"); !strings.Contains(got.Error.Message, c.says) {
			t.Errorf("%s: message %q, want it to say %q", c.what, got.Error.Message, c.says)
		}
	}
	var users int
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM users WHERE tenant_id = $1`, tn).Scan(&users); err != nil || users != 0 {
		t.Fatalf("users after refusals: %d (%v), want none", users, err)
	}

	for i, password := range []string{"amber walrus canoe", "grüne Möwe über Kiel", "多摩川の河原で凧揚げ", strings.Repeat("zq8-Lw3r-", 8)} {
		email := "pw-ok-" + strings.Repeat("y", i+1) + "@example.com"
		must[map[string]any](e, 201, "POST", path, adminToken, map[string]any{"email": email, "password": password})
		if _, err := e.srv.Tenants.CheckLogin(context.Background(), email, password); err != nil {
			t.Errorf("sign in with %q: %v", password, err)
		}
	}
}
