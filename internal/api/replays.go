package api

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/params"
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

func (b replayBody) request() (replays.ReplayRequest, error) {
	var req replays.ReplayRequest
	var err error
	req.Filter, err = params.API.DeadFilter(params.DeadCriteria{
		TenantID: b.TenantID, SubscriptionID: b.SubscriptionID, EventType: b.EventType, States: b.States,
		DeadReason: b.DeadReason, CreatedFrom: b.CreatedFrom, CreatedTo: b.CreatedTo,
	})
	if err != nil {
		return req, err
	}
	if req.Spread, err = params.SpreadSeconds(b.SpreadSeconds); err != nil {
		return req, err
	}
	req.DryRun = b.DryRun
	return req, replays.ValidateReplay(req.Filter)
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
	req.Actor = caller(r).AuditName()
	rp, err := a.Replays.Start(r.Context(), req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, viewReplay(rp))
}

// listReplaysFor renders one page of the audit log, of one tenant's recovers when tenant is set.
func (a *API) listReplaysFor(w http.ResponseWriter, r *http.Request, tenant *uuid.UUID) {
	// limit, cursor and dry_run (true: dry runs only; false: real replays only; absent: both, the whole
	// audit log); any other or malformed parameter is INVALID_REQUEST.
	f, err := params.ReplayList(r.URL.Query())
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
	since, err := params.BodyTime("since", b.Since)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if _, err := a.Subscriptions.Get(r.Context(), tenantID(r), id); err != nil {
		writeError(w, r, err)
		return
	}
	rp, err := a.Replays.Recover(r.Context(), tenantID(r), id, since, b.DryRun, caller(r).AuditName())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, viewReplay(rp))
}
