package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/replays"
)

// replayView is a replay as the API shows it: the audit record, its progress and, in a dry run's answer
// only, a sample of the matching delivery ids (an empty array when nothing matches).
type replayView struct {
	replays.Replay
	Progress float64      `json:"progress"`
	Sample   *[]uuid.UUID `json:"sample,omitempty"`
}

func viewReplay(r replays.Replay) replayView {
	v := replayView{Replay: r, Progress: r.Progress()}
	if r.Sample != nil {
		s := r.Sample
		v.Sample = &s
	}
	return v
}

// replayBody is the body of POST /replays. Ids and times are strings so that a malformed one gets a message
// naming the field.
type replayBody struct {
	TenantID       *string  `json:"tenant_id"`
	SubscriptionID *string  `json:"subscription_id"`
	EventType      string   `json:"event_type"`
	States         []string `json:"states"`
	DeadReason     string   `json:"dead_reason"`
	CreatedFrom    *string  `json:"created_from"`
	CreatedTo      *string  `json:"created_to"`
	SpreadSeconds  *int     `json:"spread_seconds"`
	DryRun         bool     `json:"dry_run"`
}

// parseID parses an optional id field of a body.
func parseID(field string, s *string) (*uuid.UUID, error) {
	if s == nil {
		return nil, nil
	}
	id, err := uuid.Parse(*s)
	if err != nil {
		return nil, fault.Invalid("%s is not a valid id", field)
	}
	return &id, nil
}

// parseTime parses a required RFC 3339 time field of a body.
func parseTime(field string, s *string) (time.Time, error) {
	if s == nil || *s == "" {
		return time.Time{}, fault.Invalid("%s is required (an RFC 3339 time such as 2026-01-02T15:04:05Z)", field)
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return time.Time{}, fault.Invalid("%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z", field)
	}
	return t, nil
}

func (b replayBody) request() (replays.ReplayRequest, error) {
	var req replays.ReplayRequest
	f := &req.Filter
	var err error
	if f.TenantID, err = parseID("tenant_id", b.TenantID); err != nil {
		return req, err
	}
	if f.SubscriptionID, err = parseID("subscription_id", b.SubscriptionID); err != nil {
		return req, err
	}
	from, err := parseTime("created_from", b.CreatedFrom)
	if err != nil {
		return req, err
	}
	to, err := parseTime("created_to", b.CreatedTo)
	if err != nil {
		return req, err
	}
	f.CreatedFrom, f.CreatedTo = &from, &to
	f.EventType, f.DeadReason = b.EventType, b.DeadReason
	for _, s := range b.States {
		f.States = append(f.States, delivery.State(s))
	}
	req.Spread = replays.DefaultSpread
	if b.SpreadSeconds != nil {
		maxSpread := int(replays.MaxSpread / time.Second)
		if *b.SpreadSeconds < 1 || *b.SpreadSeconds > maxSpread {
			return req, fault.Invalid("spread_seconds must be a whole number from 1 to %d", maxSpread)
		}
		req.Spread = time.Duration(*b.SpreadSeconds) * time.Second
	}
	req.DryRun = b.DryRun
	return req, replays.ValidateReplay(req.Filter)
}

// actor names the caller in the audit log.
func actor(r *http.Request) string {
	p := principal(r)
	switch {
	case p.Actor != "":
		return p.Actor
	case p.Admin:
		return "admin token"
	}
	return "tenant token"
}

func (a *API) startReplay(w http.ResponseWriter, r *http.Request) {
	var b replayBody
	if err := decode(r, &b); err != nil {
		writeError(w, r, err)
		return
	}
	req, err := b.request()
	if err != nil {
		writeError(w, r, err)
		return
	}
	if req.Filter.TenantID != nil {
		if _, err := a.Tenants.GetTenant(r.Context(), *req.Filter.TenantID); err != nil {
			if fault.Is(err, fault.NotFound) {
				err = fault.Invalid("tenant_id names no tenant")
			}
			writeError(w, r, err)
			return
		}
	}
	req.Actor = actor(r)
	rp, err := a.Replays.Start(r.Context(), req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, viewReplay(rp))
}

// replayListFilter parses limit, cursor and dry_run (true: dry runs only; false: real replays only; absent:
// both, the whole audit log); any other or malformed parameter is INVALID_REQUEST.
func replayListFilter(r *http.Request) (replays.ReplayListFilter, error) {
	q := r.URL.Query()
	var f replays.ReplayListFilter
	for key := range q {
		if key != "limit" && key != "cursor" && key != "dry_run" {
			return f, fault.Invalid("unknown query parameter %q", key)
		}
	}
	if q.Has("dry_run") {
		dry, err := strconv.ParseBool(q.Get("dry_run"))
		if err != nil {
			return f, fault.Invalid("dry_run must be true or false")
		}
		f.DryRun = &dry
	}
	var err error
	if f.Limit, err = queryLimit(q); err != nil {
		return f, err
	}
	f.Cursor = q.Get("cursor")
	return f, nil
}

// listReplaysFor renders one page of the audit log, of one tenant's recovers when tenant is set.
func (a *API) listReplaysFor(w http.ResponseWriter, r *http.Request, tenant *uuid.UUID) {
	f, err := replayListFilter(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	f.TenantID = tenant
	page, err := a.Replays.List(r.Context(), f)
	if err != nil {
		writeError(w, r, err)
		return
	}
	items := make([]replayView, 0, len(page.Items))
	for _, rp := range page.Items {
		items = append(items, viewReplay(rp))
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": page.NextCursor})
}

// getReplayFor renders one replay, limited to one tenant's recovers when tenant is set.
func (a *API) getReplayFor(w http.ResponseWriter, r *http.Request, tenant *uuid.UUID) {
	id, err := pathID(r, "replayID", "replay")
	if err != nil {
		writeError(w, r, err)
		return
	}
	rp, err := a.Replays.Get(r.Context(), id, tenant)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewReplay(rp))
}

func (a *API) listReplays(w http.ResponseWriter, r *http.Request) { a.listReplaysFor(w, r, nil) }

func (a *API) getReplay(w http.ResponseWriter, r *http.Request) { a.getReplayFor(w, r, nil) }

func (a *API) listTenantReplays(w http.ResponseWriter, r *http.Request) {
	t := tenantID(r)
	a.listReplaysFor(w, r, &t)
}

func (a *API) getTenantReplay(w http.ResponseWriter, r *http.Request) {
	t := tenantID(r)
	a.getReplayFor(w, r, &t)
}

// recoverBody is the body of POST .../subscriptions/{id}/recover.
type recoverBody struct {
	Since  *string `json:"since"`
	DryRun bool    `json:"dry_run"`
}

func (a *API) recoverSubscription(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	var b recoverBody
	if err := decode(r, &b); err != nil {
		writeError(w, r, err)
		return
	}
	since, err := parseTime("since", b.Since)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if _, err := a.Subscriptions.Get(r.Context(), tenantID(r), id); err != nil {
		writeError(w, r, err)
		return
	}
	rp, err := a.Replays.Recover(r.Context(), tenantID(r), id, since, b.DryRun, actor(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, viewReplay(rp))
}
