package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// BulkReplay is the bulk replay form. GET with criteria and POST action=preview preview the replay without
// changing anything; POST action=confirm starts it and leads to its page. A wrong or missing value is shown
// on the form.
func (h *Handler) BulkReplay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := r.URL.Query()
	action := "preview"
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			h.Fail(w, r, fault.Invalid("the form could not be read"))
			return
		}
		v, action = r.PostForm, r.PostFormValue("action")
	}
	_, tenants, err := h.tenantNames(ctx)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	f, form, err := parseDeadFilter(v, tenants)
	form.Spread = strings.TrimSpace(v.Get("spread"))
	if form.Spread == "" {
		form.Spread = params.DefaultSpreadMinutes
	}
	p := templates.BulkReplayPage{Layout: h.adminLayout(r, templates.NavReplay, "Bulk replay", templates.Crumb{Label: "Bulk replay"}), Filter: form}
	spread, serr := params.SpreadMinutes(form.Spread)
	if err == nil {
		err = serr
	}
	// A GET without both times is the empty form (or one prefilled from the dead letters): nothing to say yet.
	if err == nil && r.Method == http.MethodGet && (f.CreatedFrom == nil || f.CreatedTo == nil) {
		h.Render(w, r, http.StatusOK, templates.BulkReplay(p))
		return
	}
	if err == nil {
		switch action {
		case "confirm":
			var rep replays.Replay
			// Spread 0 means "at once" on the form; Start reads 0 as its default, so SpreadMinutes asks for
			// the smallest spread.
			rep, err = h.Replays.Start(ctx, replays.ReplayRequest{Filter: f, Spread: spread, Actor: core.Caller(r).AuditName()})
			if err == nil {
				// The message stays on the page while the page follows the replay (and a small replay is
				// scheduled before the page is even shown), so it says only what stays true: the progress
				// below says how far it is.
				msg := fmt.Sprintf("Replay started: %s matched. Its progress is below.",
					templates.Plural(rep.Matched, "dead delivery", "dead deliveries"))
				if rep.Matched == 0 {
					msg = "Replay recorded: no dead deliveries matched, so nothing is sent again."
				}
				h.SetFlash(r, "success", msg)
				http.Redirect(w, r, "/admin/replays/"+rep.ID.String(), http.StatusSeeOther)
				return
			}
		case "preview":
			var pv replays.Preview
			pv, err = h.Replays.Preview(ctx, f)
			if err == nil {
				p.Preview = h.previewView(pv, v, form.Spread)
			}
		default:
			err = fault.Invalid("action must be preview or confirm")
		}
	}
	status := http.StatusOK
	if err != nil {
		fe := fault.As(err)
		if fe == nil || fe.Code == fault.Internal || fe.Code == fault.NotFound {
			h.Fail(w, r, err)
			return
		}
		p.Filter.Error, status = fe.Message, fe.Code.Status()
	}
	h.Render(w, r, status, templates.BulkReplay(p))
}

func (h *Handler) previewView(pv replays.Preview, v url.Values, spread string) *templates.ReplayPreview {
	out := &templates.ReplayPreview{Matched: pv.Matched, MoreGroups: len(pv.Groups) >= replays.MaxPreviewGroups,
		DeletedNote: deletedNote(pv)}
	for _, g := range pv.Groups {
		out.Groups = append(out.Groups, templates.GroupRow{
			TenantName: g.TenantName, TenantHref: "/admin/tenants/" + g.TenantID.String(),
			SubURL: g.SubscriptionURL, SubHref: "/subscriptions/" + g.SubscriptionID.String(), Deliveries: g.Deliveries,
		})
	}
	for _, d := range pv.Sample {
		out.Sample = append(out.Sample, h.deadRow(d))
	}
	for _, k := range params.DeadFormKeys {
		if s := v.Get(k); s != "" {
			out.Hidden = append(out.Hidden, templates.KV{Key: k, Value: s})
		}
	}
	out.Hidden = append(out.Hidden, templates.KV{Key: "spread", Value: spread})
	return out
}

// deletedNote says why the dead deliveries of deleted endpoints that fit the criteria are not matched: the
// dead-letter list shows them, so a preview matching fewer (or none) would otherwise be a puzzle.
func deletedNote(pv replays.Preview) string {
	n := pv.OfDeletedSubscriptions
	if n == 0 {
		return ""
	}
	more := ""
	if pv.Matched > 0 {
		more = " more"
	}
	if n == 1 {
		return "1" + more + " dead delivery fits these criteria but is not replayed: its endpoint was deleted, and deliveries of deleted endpoints are never sent again."
	}
	return fmt.Sprintf("%d%s dead deliveries fit these criteria but are not replayed: their endpoints were deleted, and deliveries of deleted endpoints are never sent again.", n, more)
}
