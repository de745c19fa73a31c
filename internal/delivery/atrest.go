package delivery

import (
	"fmt"

	"github.com/hookline/hookline/internal/secretbox"
)

// openStored turns a claimed row's stored signing secrets and custom header values into plaintext with
// open (WorkerOptions.Open). Without it, plaintext values pass and sealed ones are refused: a sealed value
// sent as it is would be a wrong signature or a leaked ciphertext. Any value that does not open is an
// error: signing with fewer secrets than the receiver expects, or sending without a header it needs,
// would be a failure that is ours, not the receiver's.
func openStored(open func(string) (string, error), secrets []string, headers map[string]string) ([]string, map[string]string, error) {
	if open == nil {
		open = noKeyOpen
	}
	outSecrets := make([]string, len(secrets))
	for i, s := range secrets {
		p, err := open(s)
		if err != nil {
			return nil, nil, fmt.Errorf("signing secret: %w", err)
		}
		outSecrets[i] = p
	}
	outHeaders := make(map[string]string, len(headers))
	for k, v := range headers {
		p, err := open(v)
		if err != nil {
			return nil, nil, fmt.Errorf("custom header %s: %w", k, err)
		}
		outHeaders[k] = p
	}
	return outSecrets, outHeaders, nil
}

// noKeyOpen opens values without HOOKLINE_SECRET_KEY: plaintext passes, sealed values are refused.
func noKeyOpen(v string) (string, error) {
	var noKey *secretbox.Box
	return noKey.Open(v)
}

// opener is the worker's Open, or noKeyOpen.
func (w *Worker) opener() func(string) (string, error) {
	if w.o.Open != nil {
		return w.o.Open
	}
	return noKeyOpen
}
