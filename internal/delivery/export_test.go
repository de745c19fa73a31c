package delivery

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
)

// Test hooks for the external test package (delivery_test): they reach the worker's claim and its
// batched completer without HTTP.

// Claim claims up to n due deliveries under one new lease, as the fetcher does.
func (w *Worker) Claim(ctx context.Context, n int) ([]db.ClaimDeliveriesRow, uuid.UUID, error) {
	return w.claim(ctx, n)
}

// RecordStatus records, through Record, one synthetic attempt per row that answered status, decided by
// the worker's policy as a real attempt would be.
func (w *Worker) RecordStatus(ctx context.Context, rows []db.ClaimDeliveriesRow, leaseID uuid.UUID, status int) error {
	now := w.o.Now()
	statuses, started := make([]int, len(rows)), make([]time.Time, len(rows))
	for i := range rows {
		statuses[i], started[i] = status, now
	}
	return w.RecordStatuses(ctx, rows, leaseID, statuses, started)
}

// RecordStatuses is RecordStatus with a status and a start time of its
// own for each row, all in one batch.
func (w *Worker) RecordStatuses(ctx context.Context, rows []db.ClaimDeliveriesRow, leaseID uuid.UUID, statuses []int, startedAt []time.Time) error {
	return w.Record(ctx, w.syntheticBatch(rows, leaseID, statuses, startedAt))
}

// WriteStatus writes one synthetic attempt per row that answered status as the completer writes a batch
// (writeResults: tries, waits, gives up), each try within try; it returns when the completer would go on.
func (w *Worker) WriteStatus(ctx context.Context, rows []db.ClaimDeliveriesRow, leaseID uuid.UUID, status int, try time.Duration) {
	now := w.o.Now()
	statuses, started := make([]int, len(rows)), make([]time.Time, len(rows))
	for i := range rows {
		statuses[i], started[i] = status, now
	}
	w.recordTry = try
	w.writeResults(ctx, w.syntheticBatch(rows, leaseID, statuses, started))
}

func (w *Worker) syntheticBatch(rows []db.ClaimDeliveriesRow, leaseID uuid.UUID, statuses []int, startedAt []time.Time) []attemptResult {
	now := w.o.Now()
	batch := make([]attemptResult, len(rows))
	for i, row := range rows {
		resp := Response{StartedAt: startedAt[i], Duration: time.Millisecond, Status: statuses[i], Snippet: "ok",
			Headers: map[string]string{"webhook-id": row.EventID.String()}}
		batch[i] = attemptResult{row: row, leaseID: leaseID, resp: resp,
			decision: w.policy.Decide(Result{Status: statuses[i]}, int(row.AttemptCount)+1, row.GiveUpAt, now, w.o.Jitter())}
	}
	return batch
}

// ClaimAndRecord claims up to BatchSize due deliveries and records a synthetic status for each: the
// engine's database ceiling with no HTTP. It returns how many rows it handled.
func (w *Worker) ClaimAndRecord(ctx context.Context, status int) (int, error) {
	rows, leaseID, err := w.claim(ctx, w.o.BatchSize)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return len(rows), w.RecordStatus(ctx, rows, leaseID, status)
}

// OnNotification calls f with every notification the worker's listener gets and whether it woke the
// fetcher for it. Set before Start.
func (w *Worker) OnNotification(f func(payload string, wake bool)) { w.onNotification = f }
