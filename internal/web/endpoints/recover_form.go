package endpoints

import (
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// recentRecovers is how many of a subscription's recovers its page lists.
const recentRecovers = 5

// recoverForm fills a subscription page's recover card: the since field (24 h ago unless given) and the
// subscription's recent recovers with their progress.
func (h *Handler) recoverForm(r *http.Request, tenantID, subID uuid.UUID, rec templates.RecoverForm) (templates.RecoverForm, error) {
	rec.Action = "/subscriptions/" + subID.String() + "/recover"
	if rec.Since == "" {
		rec.Since = h.Now().Add(-24 * time.Hour).UTC().Format(params.FormTime)
	}
	// Real recovers and previews (dry runs, recorded too) are listed apart, so a row of previews never
	// hides what was actually sent.
	for _, dry := range []bool{false, true} {
		page, err := h.Replays.List(r.Context(), replays.ReplayListFilter{TenantID: &tenantID, SubscriptionID: &subID, DryRun: &dry, Limit: recentRecovers})
		if err != nil {
			return rec, err
		}
		for _, rep := range page.Items {
			row := recoverRow(h.ReplayRow(rep, nil), rep)
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
	row.Href = core.RecoverHref(rep.ID)
	if rep.Criteria.CreatedFrom != nil {
		row.Criteria = "dead deliveries created since " + rep.Criteria.CreatedFrom.UTC().Format("2006-01-02 15:04") + " UTC"
	}
	return row
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
