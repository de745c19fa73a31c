package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/web/templates"
)

// The operator pages (/admin/...): for users with Admin only; anyone else gets the 404 page, so a customer
// cannot even tell they exist.

// deadPageSize is how many dead letters one page of /admin/dead lists.
const deadPageSize = 50

// requireAdmin lets operators through to the /admin pages and answers the 404 page to anyone else.
func (h *Handler) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !currentUser(r).Admin {
			h.notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// adminLayout is the frame of an operator page: the breadcrumb starts at Admin, the sub-navigation shows.
// No incident banner of the operator's own tenant: these pages are about every tenant.
func (h *Handler) adminLayout(r *http.Request, nav, title string, crumbs ...templates.Crumb) templates.Layout {
	l := h.frame(r, title, append([]templates.Crumb{{Label: "Admin", Href: "/admin"}}, crumbs...)...)
	l.AdminNav = nav
	if !h.subs.Encrypted() {
		// The server's log says so at start too; operators who never read it see it here.
		l.Warning = "HOOKLINE_SECRET_KEY is not set: signing secrets and custom headers are stored unencrypted in the database. " +
			"Set it to base64 of 32 random bytes (openssl rand -base64 32) and restart; existing rows are encrypted at start."
	}
	return l
}

// capped writes a count that stopped at its cap as "10000+".
func capped(n, upTo int) string {
	if n >= upTo {
		return strconv.Itoa(upTo) + "+"
	}
	return strconv.Itoa(n)
}

var sortLabels = []struct{ key, label string }{
	{"name", "Tenant"}, {"subscriptions", "Subscriptions"}, {"pending", "Pending"}, {"retrying", "Retrying"},
	{"dead", "Dead"}, {"attempts", "Attempts 24 h"},
}

// admin is the overview: every tenant with its capped counts, sortable.
func (h *Handler) admin(w http.ResponseWriter, r *http.Request) {
	sort := r.URL.Query().Get("sort")
	if sort == "" {
		sort = "name"
	}
	p := templates.AdminPage{Layout: h.adminLayout(r, templates.NavOverview, "Tenants")}
	p.Crumbs = []templates.Crumb{{Label: "Admin"}}
	status := http.StatusOK
	ts, err := h.tenants.Overview(r.Context(), sort)
	if fe := fault.As(err); fe != nil && fe.Code == fault.InvalidRequest {
		p.Error, status, sort = fe.Message, http.StatusBadRequest, "name"
		ts, err = h.tenants.Overview(r.Context(), sort)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, s := range sortLabels {
		l := templates.SortLink{Key: s.key, Label: s.label, Current: s.key == sort}
		if s.key != "subscriptions" {
			l.Href = "/admin?sort=" + s.key
		}
		p.Sorts = append(p.Sorts, l)
	}
	for _, t := range ts {
		p.Tenants = append(p.Tenants, templates.TenantLine{
			ID: t.ID.String(), Name: t.Name, Href: "/admin/tenants/" + t.ID.String(), Subscriptions: t.Subscriptions,
			Pending: capped(t.Pending, tenants.OverviewCountUpTo), Retrying: capped(t.Retrying, tenants.OverviewCountUpTo),
			Dead: capped(t.Dead, tenants.OverviewCountUpTo), Attempts: capped(t.Attempts, tenants.OverviewCountUpTo),
			RetryingBad: t.Retrying > 0, DeadBad: t.Dead > 0, NoAttempts: t.Attempts == 0,
			Created: h.timeView(t.CreatedAt),
		})
	}
	if p.Operator, err = h.operatorCard(r); err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, status, templates.Admin(p))
}

// adminTenant is one tenant's subscriptions with their 24 h health, as its users see them on their home page.
func (h *Handler) adminTenant(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	subs, err := h.subscriptionsWithHealth(ctx, t.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	tokens, err := h.tenants.ListTokens(ctx, t.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := templates.AdminTenantPage{
		Layout: h.adminLayout(r, templates.NavOverview, t.Name, templates.Crumb{Label: t.Name}),
		ID:     t.ID.String(), Name: t.Name, Created: h.timeView(t.CreatedAt), Subscriptions: subs,
		DeadHref: "/admin/dead?tenant=" + t.ID.String(), ReplaysHref: "/admin/replays?tenant=" + t.ID.String(),
	}
	// The tenant's own banner: what its customers see at the top of their pages.
	p.Incidents = h.incidentBanners(r, t.ID)
	if p.Activity, err = h.recentTenantActivity(r, t.ID); err != nil {
		h.fail(w, r, err)
		return
	}
	for _, tk := range tokens {
		line := templates.TokenLine{
			ID: tk.ID.String(), Name: tk.Name, Scopes: strings.Join(tk.Scopes, ", "), Created: h.timeView(tk.CreatedAt),
			RevokeAction: "/admin/tenants/" + t.ID.String() + "/tokens/" + tk.ID.String() + "/revoke",
		}
		if tk.LastUsedAt != nil {
			line.LastUsed = h.timeView(*tk.LastUsedAt)
		}
		p.Tokens = append(p.Tokens, line)
	}
	h.render(w, r, http.StatusOK, templates.AdminTenant(p))
}

// revokeToken revokes one of a tenant's API tokens at once (its next API request is refused) and returns
// to the tenant's page. A token of another tenant, unknown or already revoked, is the 404 page.
func (h *Handler) revokeToken(w http.ResponseWriter, r *http.Request) {
	tenantID, err := pathID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	tokenID, err := uuid.Parse(r.PathValue("token"))
	if err != nil {
		h.notFound(w, r)
		return
	}
	if err := h.tenants.RevokeToken(r.Context(), tenantID, tokenID); err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("API token revoked from the dashboard", "tenant_id", tenantID, "token_id", tokenID,
		"by", currentUser(r).ID)
	h.setFlash(r, "success", "Token revoked: requests with it are refused from now on.")
	http.Redirect(w, r, "/admin/tenants/"+tenantID.String(), http.StatusSeeOther)
}

// tenantNames maps every tenant's id to its name, for filters and for criteria in words.
func (h *Handler) tenantNames(ctx context.Context) (map[uuid.UUID]string, []templates.Option, error) {
	ts, err := h.tenants.ListTenants(ctx)
	if err != nil {
		return nil, nil, err
	}
	names := make(map[uuid.UUID]string, len(ts))
	opts := make([]templates.Option, 0, len(ts))
	for _, t := range ts {
		names[t.ID] = t.Name
		opts = append(opts, templates.Option{Value: t.ID.String(), Label: t.Name})
	}
	return names, opts, nil
}

// deadCriteriaKeys are the form fields of the dead-letter criteria, in the order links carry them.
var deadCriteriaKeys = []string{"tenant", "subscription", "event_type", "state", "reason", "from", "to"}

// parseDeadFilter reads the dead-letter criteria of a form or query. The form view is filled even when a
// value is wrong, so the page shows what was typed next to the message.
func parseDeadFilter(v url.Values, tenants []templates.Option) (replays.DeadFilter, templates.DeadFilterForm, error) {
	var f replays.DeadFilter
	form := templates.DeadFilterForm{
		Tenant: strings.TrimSpace(v.Get("tenant")), Subscription: strings.TrimSpace(v.Get("subscription")),
		EventType: strings.TrimSpace(v.Get("event_type")), From: v.Get("from"), To: v.Get("to"),
	}
	state, reason := v.Get("state"), v.Get("reason")
	for _, k := range deadCriteriaKeys {
		form.Active = form.Active || v.Get(k) != ""
	}
	for _, o := range tenants {
		o.Selected = o.Value == form.Tenant
		form.Tenants = append(form.Tenants, o)
	}
	for _, o := range []templates.Option{{Value: "", Label: "Failed and expired"}, {Value: "failed", Label: "Failed"}, {Value: "expired", Label: "Expired"}} {
		o.Selected = o.Value == state
		form.States = append(form.States, o)
	}
	form.Reasons = append(form.Reasons, templates.Option{Value: "", Label: "Any reason", Selected: reason == ""})
	for _, r := range replays.DeadReasons {
		form.Reasons = append(form.Reasons, templates.Option{Value: r, Label: strings.ReplaceAll(r, "_", " "), Selected: r == reason})
	}
	if form.Tenant != "" {
		id, err := uuid.Parse(form.Tenant)
		if err != nil {
			return f, form, fault.Invalid("tenant %q is not a tenant id", form.Tenant)
		}
		f.TenantID = &id
	}
	if form.Subscription != "" {
		id, err := uuid.Parse(form.Subscription)
		if err != nil {
			return f, form, fault.Invalid("subscription %q is not a subscription id", form.Subscription)
		}
		f.SubscriptionID = &id
	}
	f.EventType = form.EventType
	switch state {
	case "":
	case string(delivery.Failed), string(delivery.Expired):
		f.States = []delivery.State{delivery.State(state)}
	default:
		return f, form, fault.Invalid("state must be failed or expired")
	}
	f.DeadReason = reason
	var err error
	if f.CreatedFrom, err = parseFormTime("Created from", form.From); err != nil {
		return f, form, err
	}
	if f.CreatedTo, err = parseFormTime("Created before", form.To); err != nil {
		return f, form, err
	}
	return f, form, f.Validate()
}

// criteriaQuery carries the dead-letter criteria of v (only those set) to another page.
func criteriaQuery(v url.Values) url.Values {
	out := url.Values{}
	for _, k := range append(deadCriteriaKeys, "limit") {
		if s := v.Get(k); s != "" {
			out.Set(k, s)
		}
	}
	return out
}

func (h *Handler) deadRow(d replays.DeadLetter) templates.DeadLetterRow {
	label, class := deliveryState(d.Delivery)
	row := templates.DeadLetterRow{
		ID: d.ID.String(), ShortID: shortID(d.ID), Href: "/deliveries/" + d.ID.String(),
		TenantName: d.TenantName, TenantHref: "/admin/tenants/" + d.TenantID.String(),
		SubURL: d.SubscriptionURL, SubHref: "/subscriptions/" + d.SubscriptionID.String(), EventType: d.EventType,
		State: label, StateClass: class, Attempts: d.TotalAttempts, Created: h.timeView(d.CreatedAt), DeadAt: h.timePtr(d.DeadAt),
	}
	if d.DeadReason != nil {
		row.Reason = delivery.DeadReasonText(*d.DeadReason, d.LastStatus)
	}
	return row
}

// deadLetters lists dead deliveries across tenants, filtered and keyset-paged, with a capped total.
func (h *Handler) deadLetters(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, tenants, err := h.tenantNames(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f, form, err := parseDeadFilter(q, tenants)
	p := templates.DeadLettersPage{Layout: h.adminLayout(r, templates.NavDead, "Dead letters", templates.Crumb{Label: "Dead letters"}), Filter: form}
	status := http.StatusOK
	// ?limit= lets an operator page in smaller or larger steps (the service caps it).
	limit := deadPageSize
	if l := q.Get("limit"); l != "" && err == nil {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 {
			err = fault.Invalid("limit must be a positive whole number")
		}
	}
	var page replays.DeadPage
	if err == nil {
		page, err = h.replays.DeadLetters(ctx, f, limit, q.Get("cursor"), countUpTo)
	}
	if fe := fault.As(err); fe != nil && fe.Code == fault.InvalidRequest {
		p.Filter.Error, status = fe.Message, http.StatusBadRequest
	} else if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, d := range page.Items {
		p.Rows = append(p.Rows, h.deadRow(d))
	}
	if status == http.StatusOK {
		// Where the outage is: by hour and by tenant, endpoint and status, each group a replay away.
		o, err := h.replays.DeadOverview(ctx, f)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		p.Chart, p.Groups = deadChartView(o, f.CreatedFrom != nil || f.CreatedTo != nil), h.deadGroupsView(o)
		p.Total = fmt.Sprintf("%s matching dead deliveries", capped(int(page.Total), countUpTo))
		if page.Total == 1 {
			p.Total = "1 matching dead delivery"
		}
		if page.Total > 0 {
			p.ReplayHref = "/admin/replay"
			if cq := criteriaQuery(q); len(cq) > 0 {
				p.ReplayHref += "?" + cq.Encode()
			}
		}
	}
	if page.NextCursor != "" {
		nq := criteriaQuery(q)
		nq.Set("cursor", page.NextCursor)
		p.NextHref = "/admin/dead?" + nq.Encode()
	}
	if q.Get("cursor") != "" {
		p.FirstHref = "/admin/dead"
		if cq := criteriaQuery(q); len(cq) > 0 {
			p.FirstHref += "?" + cq.Encode()
		}
	}
	h.render(w, r, status, templates.DeadLetters(p))
}

// bulkReplay is the bulk replay form. GET with criteria and POST action=preview preview the replay without
// changing anything; POST action=confirm starts it and leads to its page. A wrong or missing value is shown
// on the form.
func (h *Handler) bulkReplay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := r.URL.Query()
	action := "preview"
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			h.fail(w, r, fault.Invalid("the form could not be read"))
			return
		}
		v, action = r.PostForm, r.PostFormValue("action")
	}
	_, tenants, err := h.tenantNames(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f, form, err := parseDeadFilter(v, tenants)
	form.Spread = strings.TrimSpace(v.Get("spread"))
	if form.Spread == "" {
		form.Spread = strconv.Itoa(int(replays.DefaultSpread / time.Minute))
	}
	p := templates.BulkReplayPage{Layout: h.adminLayout(r, templates.NavReplay, "Bulk replay", templates.Crumb{Label: "Bulk replay"}), Filter: form}
	spread, serr := strconv.Atoi(form.Spread)
	if err == nil && (serr != nil || spread < 0 || time.Duration(spread)*time.Minute > replays.MaxSpread) {
		err = fault.Invalid("spread must be a whole number of minutes from 0 to %d", int(replays.MaxSpread/time.Minute))
	}
	// A GET without both times is the empty form (or one prefilled from the dead letters): nothing to say yet.
	if err == nil && r.Method == http.MethodGet && (f.CreatedFrom == nil || f.CreatedTo == nil) {
		h.render(w, r, http.StatusOK, templates.BulkReplay(p))
		return
	}
	if err == nil {
		switch action {
		case "confirm":
			var rep replays.Replay
			// Spread 0 means "at once" on the form; Start reads 0 as its default, so ask for the smallest spread.
			d := max(time.Duration(spread)*time.Minute, time.Second)
			rep, err = h.replays.Start(ctx, replays.ReplayRequest{Filter: f, Spread: d, Actor: currentUser(r).Email})
			if err == nil {
				// The message stays on the page while the page follows the replay (and a small replay is
				// scheduled before the page is even shown), so it says only what stays true: the progress
				// below says how far it is.
				msg := fmt.Sprintf("Replay started: %s matched. Its progress is below.",
					templates.Plural(rep.Matched, "dead delivery", "dead deliveries"))
				if rep.Matched == 0 {
					msg = "Replay recorded: no dead deliveries matched, so nothing is sent again."
				}
				h.setFlash(r, "success", msg)
				http.Redirect(w, r, "/admin/replays/"+rep.ID.String(), http.StatusSeeOther)
				return
			}
		case "preview":
			var pv replays.Preview
			pv, err = h.replays.Preview(ctx, f)
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
			h.fail(w, r, err)
			return
		}
		p.Filter.Error, status = fe.Message, fe.Code.Status()
	}
	h.render(w, r, status, templates.BulkReplay(p))
}

func (h *Handler) previewView(pv replays.Preview, v url.Values, spread string) *templates.ReplayPreview {
	out := &templates.ReplayPreview{Matched: pv.Matched, MoreGroups: len(pv.Groups) >= replays.MaxPreviewGroups}
	for _, g := range pv.Groups {
		out.Groups = append(out.Groups, templates.GroupRow{
			TenantName: g.TenantName, TenantHref: "/admin/tenants/" + g.TenantID.String(),
			SubURL: g.SubscriptionURL, SubHref: "/subscriptions/" + g.SubscriptionID.String(), Deliveries: g.Deliveries,
		})
	}
	for _, d := range pv.Sample {
		out.Sample = append(out.Sample, h.deadRow(d))
	}
	for _, k := range deadCriteriaKeys {
		if s := v.Get(k); s != "" {
			out.Hidden = append(out.Hidden, templates.KV{Key: k, Value: s})
		}
	}
	out.Hidden = append(out.Hidden, templates.KV{Key: "spread", Value: spread})
	return out
}
