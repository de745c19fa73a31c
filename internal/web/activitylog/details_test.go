package activitylog

import "testing"

// A change of the receiver fields is told by field, and for the authentication by part, never a value.
func TestChangedReceiverFieldsInWords(t *testing.T) {
	t.Parallel()
	d := map[string]any{"fields": []any{"auth", "tls_client_certificate", "filter", "retry_schedule"}, "auth": []any{"username", "password"}}
	want := "changed: authentication (user name, password), client certificate, payload filter, retry schedule"
	if got := changedFields(d); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
