package tenants

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hookline/hookline/internal/fault"
	"github.com/trustelem/zxcvbn"
)

// Password rules for dashboard logins (CreateUser, SetPassword, HOOKLINE_ADMIN_PASSWORD and the demo's).
const (
	// MinPasswordLength is the fewest characters (Unicode code points, not bytes) a password may have.
	MinPasswordLength = 10
	// MaxPasswordBytes is the most a password may take in UTF-8: bcrypt reads no further, so a longer one
	// would sign in with any text that shares its first 72 bytes.
	MaxPasswordBytes = 72
	// MinPasswordScore is the least zxcvbn score accepted (0 to 4): 3 is about 10^8 guesses, past what an
	// attacker gets through online guessing, and refuses common passwords ("password12"), common words
	// with digits, names, dates, keyboard walks ("qwertyuiop"), sequences and repeats.
	MinPasswordScore = 3
)

// weakHints are words a password of this service must not lean on: zxcvbn counts them as known to an
// attacker, like the account's own email.
var weakHints = []string{"hookline", "webhook", "webhooks", "dashboard", "admin"}

// validatePassword checks a new password for the login email. Every refusal is INVALID_REQUEST saying
// which rule it broke. A password is text a person types into the sign-in form, which refuses NUL and
// invalid UTF-8 and cannot carry other control characters, so a password holding any could never sign in.
func validatePassword(email, password string) error {
	if !utf8.ValidString(password) || strings.ContainsRune(password, utf8.RuneError) {
		// encoding/json turns invalid UTF-8 and lone surrogates into U+FFFD, so that is refused too.
		return fault.Invalid("password must be valid UTF-8 text (no invalid bytes, lone surrogates or U+FFFD)")
	}
	for _, r := range password {
		if unicode.IsControl(r) {
			return fault.Invalid("password must not contain control characters (such as NUL, tab or newline): found U+%04X", r)
		}
	}
	if n := utf8.RuneCountInString(password); n < MinPasswordLength {
		return fault.Invalid("password must be at least %d characters; it has %d", MinPasswordLength, n)
	}
	if n := len(password); n > MaxPasswordBytes {
		return fault.Invalid("password must be at most %d bytes in UTF-8 (%d ASCII characters; fewer with accented or other letters); it has %d bytes",
			MaxPasswordBytes, MaxPasswordBytes, n)
	}
	if strings.TrimFunc(password, unicode.IsSpace) == "" {
		return fault.Invalid("password must not be only spaces")
	}
	hints := append([]string{email}, weakHints...)
	if local, _, ok := strings.Cut(email, "@"); ok {
		hints = append(hints, local)
	}
	if zxcvbn.PasswordStrength(password, hints).Score < MinPasswordScore {
		return fault.Invalid("password is too easy to guess: it is a common password, or built from common words, " +
			"names, dates, the email address, keyboard patterns, sequences or repeats; use a longer passphrase of uncommon words")
	}
	return nil
}
