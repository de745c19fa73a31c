package main

import (
	"context"
	"errors"
)

// errNoPolling is listen's answer while the API has no polling subscriptions (a subscription whose
// events a client fetches instead of receiving them at a URL), which it needs to fetch a tenant's
// events from behind a firewall or on a laptop. Its flags are the ones it will take.
var errNoPolling = errors.New("not available yet: this server has no polling subscriptions")

func runListen(_ context.Context, in *invocation) error {
	if err := in.wantArgs(); err != nil {
		return err
	}
	return errNoPolling
}
