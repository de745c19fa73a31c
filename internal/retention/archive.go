package retention

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ArchivedDelivery is one line of an archive file: a dead delivery with its event and attempts. It holds
// no secret: signing secrets and the subscription's custom headers are not read, and the attempts'
// request headers were stored without them.
type ArchivedDelivery struct {
	ID             uuid.UUID         `json:"id"`
	TenantID       uuid.UUID         `json:"tenant_id"`
	SubscriptionID uuid.UUID         `json:"subscription_id"`
	State          string            `json:"state"`
	DeadReason     *string           `json:"dead_reason"`
	DeadAt         *time.Time        `json:"dead_at"`
	DiscardedAt    *time.Time        `json:"discarded_at"`
	AttemptCount   int32             `json:"attempt_count"`
	TotalAttempts  int32             `json:"total_attempts"`
	ManualRetries  int32             `json:"manual_retries"`
	LastAttemptAt  *time.Time        `json:"last_attempt_at"`
	LastStatus     *int32            `json:"last_status"`
	LastError      *string           `json:"last_error"`
	ReplayID       *uuid.UUID        `json:"replay_id"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
	ArchivedAt     time.Time         `json:"archived_at"`
	Event          ArchivedEvent     `json:"event"`
	Attempts       []ArchivedAttempt `json:"attempts"`
}

// ArchivedEvent is the delivery's event; Body is the JSON exactly as sent to the receiver.
type ArchivedEvent struct {
	ID        uuid.UUID       `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Body      json.RawMessage `json:"body"`
}

// ArchivedAttempt is one HTTP request of the delivery.
type ArchivedAttempt struct {
	Attempt         int32           `json:"attempt"`
	StartedAt       time.Time       `json:"started_at"`
	DurationMs      int32           `json:"duration_ms"`
	Status          *int32          `json:"status"`
	Outcome         string          `json:"outcome"`
	Error           string          `json:"error"`
	ResponseSnippet string          `json:"response_snippet"`
	RequestURL      string          `json:"request_url"`
	RequestHeaders  json.RawMessage `json:"request_headers"`
}

// archiveDead archives and deletes dead deliveries that died before cutoff, a batch at a time. Each batch
// is one transaction: lock the rows (FOR UPDATE, so no retry or replay can revive them meanwhile), append
// them to the archive file as one complete gzip member, fsync, delete them, commit. A crash or failed
// commit after the fsync leaves the rows in the database and in the archive, and the next sweep archives
// them again: an archived row can be duplicated, never lost. Readers should dedupe on id.
func (s *Sweeper) archiveDead(ctx context.Context, conn *pgxpool.Conn, cutoff, now time.Time, res *Result) error {
	var f *os.File
	defer func() {
		if f != nil {
			_ = f.Close()
		}
	}()
	for {
		var n, ev int64
		start := time.Now()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			q := db.New(tx)
			rows, err := q.LockDeadBefore(ctx, db.LockDeadBeforeParams{Cutoff: cutoff, Max: int32(s.o.BatchSize)})
			if err != nil || len(rows) == 0 {
				return err
			}
			ids := make([]uuid.UUID, len(rows))
			for i, r := range rows {
				ids[i] = r.ID
			}
			attempts, err := q.ListAttemptsOfDeliveries(ctx, ids)
			if err != nil {
				return fmt.Errorf("read attempts to archive: %w", err)
			}
			if f == nil {
				if f, err = createArchive(s.o.ArchiveDir, now); err != nil {
					return err
				}
				res.ArchiveFile = f.Name()
			}
			if err := appendMember(f, archiveRecords(rows, attempts, now)); err != nil {
				return fmt.Errorf("write archive %s: %w", f.Name(), err)
			}
			eventIDs, err := q.DeleteDeliveriesByID(ctx, ids)
			if err != nil {
				return fmt.Errorf("delete archived deliveries: %w", err)
			}
			n = int64(len(eventIDs))
			ev, err = deleteEmptiedEvents(ctx, q, eventIDs)
			return err
		})
		if err != nil {
			return err
		}
		res.Archived += n
		s.o.Metrics.Archived.Add(float64(n))
		s.count("dead", n, &res.Dead)
		s.count("events", ev, &res.Events)
		if n < int64(s.o.BatchSize) {
			return nil
		}
		if !s.pause(ctx, time.Since(start), n) {
			return ctx.Err()
		}
	}
}

// createArchive makes the directory if needed and a new file dead-YYYYMMDD-HHMMSS-<n>.jsonl.gz, n counting
// up past files already there (several sweeps may start in one second).
func createArchive(dir string, now time.Time) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("archive directory: %w", err)
	}
	stamp := now.UTC().Format("20060102-150405")
	for n := 1; ; n++ {
		name := filepath.Join(dir, fmt.Sprintf("dead-%s-%d.jsonl.gz", stamp, n))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o640)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("archive file: %w", err)
		}
		// The new name must survive a crash too, or the fsynced data would be unreachable.
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			_ = d.Close()
		}
		return f, nil
	}
}

// appendMember writes the records as one complete gzip member and fsyncs the file. gzip readers (Go's,
// gunzip, zcat) read concatenated members as one stream, and a file cut short by a crash still holds every
// batch whose deletion could have committed.
func appendMember(f *os.File, recs []ArchivedDelivery) (err error) {
	// A member cut short by an error would make every member after it unreadable: cut it off again.
	st, err := f.Stat()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Truncate(st.Size())
		}
	}()
	zw := gzip.NewWriter(f)
	enc := json.NewEncoder(zw) // one object per line: Encode ends each with a newline
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Sync()
}

func archiveRecords(rows []db.LockDeadBeforeRow, attempts []db.ListAttemptsOfDeliveriesRow, now time.Time) []ArchivedDelivery {
	byDelivery := map[uuid.UUID][]ArchivedAttempt{}
	for _, a := range attempts {
		byDelivery[a.DeliveryID] = append(byDelivery[a.DeliveryID], ArchivedAttempt{
			Attempt: a.Attempt, StartedAt: a.StartedAt, DurationMs: a.DurationMs, Status: a.Status, Outcome: a.Outcome,
			Error: a.Error, ResponseSnippet: a.ResponseSnippet, RequestURL: a.RequestURL, RequestHeaders: rawJSON(a.RequestHeaders),
		})
	}
	out := make([]ArchivedDelivery, len(rows))
	for i, r := range rows {
		out[i] = ArchivedDelivery{
			ID: r.ID, TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, State: r.State, DeadReason: r.DeadReason,
			DeadAt: r.DeadAt, DiscardedAt: r.DiscardedAt, AttemptCount: r.AttemptCount, TotalAttempts: r.TotalAttempts,
			ManualRetries: r.ManualRetries, LastAttemptAt: r.LastAttemptAt, LastStatus: r.LastStatus, LastError: r.LastError,
			ReplayID: r.ReplayID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ArchivedAt: now,
			Event:    ArchivedEvent{ID: r.EventID, Type: r.EventType, CreatedAt: r.EventCreatedAt, Body: rawJSON(r.EventBody)},
			Attempts: byDelivery[r.ID],
		}
		if out[i].Attempts == nil {
			out[i].Attempts = []ArchivedAttempt{}
		}
	}
	return out
}

// rawJSON passes stored JSON through as is; anything that is not JSON (never expected: bodies are
// validated at publish) becomes a JSON string rather than breaking the line.
func rawJSON(b []byte) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}
