package delivery

import (
	"context"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/sleep"
	"github.com/jackc/pgx/v5"
)

// listen holds a connection that LISTENs for new deliveries and wakes the fetcher on each notification.
func (w *Worker) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("listening for new deliveries failed; polling until it reconnects", "err", err)
		sleep.For(ctx, time.Second)
	}
}

func (w *Worker) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := db.New(conn).ListenForDeliveries(ctx); err != nil {
		return err
	}
	w.Wake() // anything published while we were not listening
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		wake := n.Payload != w.origin // this process's publishes woke the worker already (Origin)
		if wake {
			w.Wake()
		}
		if w.onNotification != nil {
			w.onNotification(n.Payload, wake)
		}
	}
}
