package server

import (
	"context"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/publish"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PlanMode says how a pool's statements are planned.
type PlanMode int

const (
	// PlanPerCall plans every statement with its actual parameters (plan_cache_mode = force_custom_plan).
	// The list queries need it: their optional filters ("$1 IS NULL OR subscription_id = $1") only fold
	// into the right index scan when planned with the values, and a generic plan cached while a table was
	// small could stay a sequential scan once it holds millions of rows.
	PlanPerCall PlanMode = iota
	// PlanCached lets PostgreSQL cache plans (its default). The engine's statements have one good plan
	// whatever their parameters (the claim is an ordered scan of the pending index even as a generic plan
	// made on an empty table: TestClaimGenericPlanUsesPendingIndex), and planning them on every call cost
	// about a third of the drain rate.
	PlanCached
	// PlanGeneric always uses the generic plan (plan_cache_mode = force_generic_plan). For the publish:
	// left to choose, PostgreSQL planned its statement afresh on every call (0.65 ms, longer than it takes
	// to run), and the generic plan is the same one: the batch's arrays are joined to one tenant's
	// subscriptions through their index whatever their length.
	PlanGeneric
)

// Connections per process: Pool's and EnginePool's 16 each, GenericPool's, and three sessions of their own
// (the worker's LISTEN, the token revocations' LISTEN and the maintenance leader's advisory lock). The
// docs/operations.md and docs/scaling.md size max_connections by MaxConns.
const (
	PoolConns    = 16 // Pool's and EnginePool's, each
	GenericConns = publish.PublishConns + 2
	MaxConns     = 2*PoolConns + GenericConns + 3
)

// DefaultConnectTimeout bounds each connection attempt to each host of DATABASE_URL when it sets no
// connect_timeout. Without a bound, a host that stopped answering without refusing (a crashed machine, a
// network partition) holds a connection attempt for as long as TCP keeps trying, minutes, and with several
// hosts the ones after it are never tried: the new primary of a failover would go unfound.
const DefaultConnectTimeout = 5 * time.Second

// Connect opens a pool with the given planning mode. The maintenance leader and the worker's listener
// open their own connections with the pool's settings, so they share its hosts and timeouts.
func Connect(ctx context.Context, url string, maxConns int32, mode PlanMode) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	switch mode {
	case PlanPerCall:
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	case PlanGeneric:
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "hookline"
	cfg.AfterConnect = pgxuuid.AfterConnect // uuids in binary, not through their string forms
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// pool is one pool as a service: Start connects it, Stop closes it. Close waits for every borrowed
// connection; a request or task still stuck on the database after ctx must not hold the exit.
type pool struct {
	url   string
	conns int32
	mode  PlanMode
	*pgxpool.Pool
}

func (p *pool) Start(ctx context.Context) (err error) {
	p.Pool, err = Connect(ctx, p.url, p.conns, p.mode)
	return err
}

func (p *pool) Stop(ctx context.Context) error { return within(ctx, p.Close) }
