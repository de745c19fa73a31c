package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/web/templates"
)

// recentRecovers is how many of a subscription's recovers its page lists.
const recentRecovers = 5

// recoverForm fills a subscription page's recover card: the since field (24 h ago unless given) and the
// subscription's recent recovers with their progress.
func (h *Handler) recoverForm(r *http.Request, tenantID, subID uuid.UUID, rec templates.RecoverForm) (templates.RecoverForm, error) {
	rec.Action = "/subscriptions/" + subID.String() + "/recover"
	if rec.Since == "" {
		rec.Since = h.now().Add(-24 * time.Hour).UTC().Format(formTime)
	}
	// Real recovers and previews (dry runs, recorded too) are listed apart, so a row of previews never
	// hides what was actually sent.
	for _, dry := range []bool{false, true} {
		page, err := h.replays.List(r.Context(), replays.ReplayListFilter{TenantID: &tenantID, SubscriptionID: &subID, DryRun: &dry, Limit: recentRecovers})
		if err != nil {
			return rec, err
		}
		for _, rep := range page.Items {
			row := recoverRow(h.replayRow(rep, nil), rep)
			if dry {
				rec.Previews = append(rec.Previews, row)
			} else {
				rec.Recovers = append(rec.Recovers, row)
			}
		}
	}
	return rec, nil
}

// recoverRow is a recover as a customer reads it: its criteria in their words, and a link to its own page.
func recoverRow(row templates.ReplayRow, rep replays.Replay) templates.ReplayRow {
	row.Href = recoverHref(rep.ID)
	if rep.Criteria.CreatedFrom != nil {
		row.Criteria = "dead deliveries created since " + rep.Criteria.CreatedFrom.UTC().Format("2006-01-02 15:04") + " UTC"
	}
	return row
}

// recoverPage is one recover, for the customer whose it is (an operator may open any): what it scheduled
// and what became of it, following it until every delivery it scheduled is final, like the operator's
// replay page.
func (h *Handler) recoverPage(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	u := currentUser(r)
	var scope *uuid.UUID
	if !u.Admin {
		t, ok := tenantOf(u)
		if !ok {
			h.notFound(w, r)
			return
		}
		scope = &t
	}
	ctx := r.Context()
	rep, err := h.replays.Get(ctx, id, scope)
	if err == nil && (rep.Kind != replays.ReplayRecover || rep.TenantID == nil || rep.SubscriptionID == nil) {
		err = fault.Missing("recover")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	tenantID, subID := *rep.TenantID, *rep.SubscriptionID
	subName := shortID(subID)
	if s, err := h.subs.Get(ctx, tenantID, subID); err == nil {
		subName = s.URL
		if s.Description != "" {
			subName = s.Description
		}
	} else if !fault.Is(err, fault.NotFound) {
		h.fail(w, r, err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	dels, err := h.replays.Deliveries(ctx, id, replayPageSize, cursor)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	title := "Recover " + shortID(id)
	crumbs := append(h.tenantCrumbs(r, tenantID), templates.Crumb{Label: subName, Href: "/subscriptions/" + subID.String()},
		templates.Crumb{Label: title})
	p := templates.ReplayPage{Layout: h.tenantLayout(r, tenantID, title, crumbs...), Customer: !u.Admin}
	h.fillReplayPage(&p, rep, nil, dels, recoverHref(id), cursor)
	p.Replay = recoverRow(p.Replay, rep)
	if p.Customer {
		p.Replay.Actor = startedBy(rep)
	}
	h.render(w, r, http.StatusOK, templates.ReplayView(p))
}

// recover is a customer's self-service replay of one subscription's dead deliveries. action=preview is a
// dry run that says how many would be sent and renders the page with a confirm button; action=confirm
// starts it and leads back with a message. Refusals (too many, too old, one running) come back as a
// warning, never an error page.
func (h *Handler) recover(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, fault.Invalid("the form could not be read"))
		return
	}
	// The page leads back to a fixed URL: what was typed travels in the session (keepRecoverSince), never in
	// the Location header.
	back := "/subscriptions/" + s.ID.String()
	sinceText := r.PostFormValue("since")
	h.keepRecoverSince(r, s.ID, sinceText)
	since, err := parseFormTime("Since", sinceText)
	if err == nil && since == nil {
		err = fault.Invalid("choose since when to recover failed deliveries")
	}
	action := r.PostFormValue("action")
	var rep replays.Replay
	if err == nil {
		switch action {
		case "preview", "confirm":
			rep, err = h.replays.Recover(r.Context(), tenantID, s.ID, *since, action == "preview", currentUser(r).Email)
		default:
			err = fault.Invalid("action must be preview or confirm")
		}
	}
	if err != nil {
		fe := fault.As(err)
		if fe == nil || fe.Code == fault.Internal || fe.Code == fault.NotFound {
			h.fail(w, r, err)
			return
		}
		prefix := "Not recovered: "
		if action == "preview" {
			prefix = "Not previewed: "
		}
		h.setFlash(r, "warning", prefix+fe.Message+".")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	when := since.UTC().Format("2006-01-02 15:04") + " UTC"
	if action == "preview" {
		rec := templates.RecoverForm{Since: sinceText, CanConfirm: rep.Matched > 0,
			Preview: fmt.Sprintf("No dead deliveries since %s: nothing to recover.", when)}
		if rep.Matched > 0 {
			rec.Preview = fmt.Sprintf("%s since %s would be replayed, %s.",
				templates.Plural(rep.Matched, "dead delivery", "dead deliveries"), when, spreadWords(rep.SpreadSeconds))
		}
		h.renderSubscription(w, r, tenantID, s, rec)
		return
	}
	if rep.Matched == 0 {
		h.setFlash(r, "info", fmt.Sprintf("Nothing to recover: no dead deliveries since %s.", when))
	} else {
		h.setFlash(r, "success", fmt.Sprintf("Recovering %s since %s: they are being sent again, %s.",
			templates.Plural(rep.Matched, "dead delivery", "dead deliveries"), when, spreadWords(rep.SpreadSeconds)))
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// startedBy names the person who started a recover as the customer's pages name people: the name their
// portal link gave, else their email (ActorName), never the audit's identifier ("portal:<user id>"). A
// recover recorded without a name (a preview from before names were kept) falls back to that identifier
// in words.
func startedBy(rep replays.Replay) string {
	if rep.ActorName != "" {
		return rep.ActorName
	}
	if id, ok := strings.CutPrefix(rep.Actor, "portal:"); ok {
		return "portal user " + id
	}
	return rep.Actor
}

// maxKeptSince bounds the since value kept for the page: a date and time is 16 characters; anything much
// longer is not one, and the form starts from its default again.
const maxKeptSince = 64

// keepRecoverSince remembers, for the subscription's page the recover leads back to, the since value that
// was typed, so the form shows it again.
func (h *Handler) keepRecoverSince(r *http.Request, subID uuid.UUID, since string) {
	if since == "" || len(since) > maxKeptSince {
		return
	}
	h.sessions.Put(r.Context(), keyRecoverSince, subID.String()+"\n"+since)
}

// recoverSince takes the since value kept for this subscription's page, if any.
func (h *Handler) recoverSince(r *http.Request, subID uuid.UUID) string {
	kept := h.sessions.PopString(r.Context(), keyRecoverSince)
	id, since, ok := strings.Cut(kept, "\n")
	if !ok || id != subID.String() {
		return ""
	}
	return since
}
