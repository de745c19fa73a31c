package httpx

import "testing"

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://user:pw@example.com/x?y=1": "https://example.com/x?y=1",
		"https://user@example.com":          "https://example.com",
		"https://example.com":               "https://example.com",
		"http://[::1":                       "(not a URL)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
