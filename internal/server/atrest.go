package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sealAtRest seals the signing secrets and custom header values still stored in plaintext, so configuring
// a key is all it takes to encrypt existing rows; or, without a key, says loudly that nothing is encrypted.
// Every starting process runs it: the updates are compare-and-set, so concurrent starts do not conflict,
// and after the first run it finds nothing to do.
func sealAtRest(ctx context.Context, pool *pgxpool.Pool, box *secretbox.Box, log *slog.Logger) error {
	if !box.Enabled() {
		log.Warn("HOOKLINE_SECRET_KEY is empty: signing secrets and custom headers are stored UNENCRYPTED in the database; " +
			"set it to base64 of 32 random bytes (openssl rand -base64 32) to encrypt them")
	} else {
		n, err := subscriptions.SealStored(ctx, pool, box, subscriptions.SealPlaintext)
		if err != nil {
			return fmt.Errorf("encrypting stored secrets: %w", err)
		}
		if n.Secrets > 0 || n.Subscriptions > 0 {
			log.Info("encrypted plaintext secrets at rest", "signing_secrets", n.Secrets, "subscriptions_with_headers", n.Subscriptions, "key_id", box.KeyIDs()[0])
		}
	}
	// A key dropped too early (or a lost one) is not fatal, as other subscriptions still deliver, but it
	// must not go unnoticed.
	bad, err := subscriptions.Unreadable(ctx, pool, box)
	if err != nil {
		return err
	}
	if bad.Secrets > 0 || bad.Subscriptions > 0 {
		log.Error("stored secrets are encrypted under a key missing from HOOKLINE_SECRET_KEY: their deliveries wait until it is added back",
			"signing_secrets", bad.Secrets, "subscriptions_with_headers", bad.Subscriptions, "configured_key_ids", box.KeyIDs())
	}
	return nil
}
