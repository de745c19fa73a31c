package demo

import (
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Services are the parts of a Hookline server the demo works through; cmd/server hands them over.
type Services struct {
	Tenants       *tenants.Service
	Subscriptions *subscriptions.Service
	Deliveries    *deliveries.Service
	Publisher     *publish.Publisher
	Catalogue     *catalogue.Service
	Portal        *portal.Service
	// EnginePool, Policy and Open are what the played-back outage is delivered through: a publisher and a
	// worker of its own on the workers' pool, with the server's retry policy and its opener of sealed
	// signing secrets (secretbox.Box.Open), on the outage's clock.
	EnginePool *pgxpool.Pool
	Policy     delivery.RetryPolicy
	Open       func(stored string) (string, error)
	// Brand is the platform's name (HOOKLINE_BRAND_NAME, or the default), on the embedding demo's page.
	Brand string
}
