package admin

import (
	"net/http"
	"strconv"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

var sortLabels = []struct{ key, label string }{
	{"name", "Tenant"}, {"subscriptions", "Subscriptions"}, {"pending", "Pending"}, {"retrying", "Retrying"},
	{"dead", "Dead"}, {"attempts", "Attempts 24 h"},
}

// Admin is the overview: every tenant with its capped counts, sortable.
func (h *Handler) Admin(w http.ResponseWriter, r *http.Request) {
	sort := r.URL.Query().Get("sort")
	if sort == "" {
		sort = "name"
	}
	p := templates.AdminPage{Layout: h.adminLayout(r, templates.NavOverview, "Tenants")}
	p.Crumbs = []templates.Crumb{{Label: "Admin"}}
	status := http.StatusOK
	ts, err := h.Tenants.Overview(r.Context(), sort)
	if fe := fault.As(err); fe != nil && fe.Code == fault.InvalidRequest {
		p.Error, status, sort = fe.Message, http.StatusBadRequest, "name"
		ts, err = h.Tenants.Overview(r.Context(), sort)
	}
	if err != nil {
		h.Fail(w, r, err)
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
			Created: h.TimeView(t.CreatedAt),
		})
	}
	if p.Operator, err = h.operatorCard(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	p.History = h.historyCard(r)
	h.Render(w, r, status, templates.Admin(p))
}

// operatorCard is /admin's "Operator notifications" card: off without HOOKLINE_OPERATOR_WEBHOOK_URL,
// otherwise the state of the internal subscription that carries them (the internal tenant is not listed
// among the customers).
func (h *Handler) operatorCard(r *http.Request) (templates.OperatorCard, error) {
	if h.Incidents == nil {
		return templates.OperatorCard{}, nil
	}
	st, err := h.Incidents.OperatorStatus(r.Context())
	if err != nil || st == nil {
		return templates.OperatorCard{}, err
	}
	dead := strconv.Itoa(st.Dead)
	if st.Dead >= incidents.DeadUpTo {
		dead += "+"
	}
	return templates.OperatorCard{
		On: true, URL: st.URL, State: st.State, StateClass: core.SubStateClass(st.State), DisabledReason: st.DisabledReason,
		CircuitOpen: st.Circuit != "closed", CircuitOpened: h.TimePtr(st.CircuitOpenedAt),
		FailingSince: h.TimePtr(st.FailingSince), LastError: st.LastError, LastErrorAt: h.TimePtr(st.LastErrorAt),
		Dead: dead, DeadBad: st.Dead > 0,
	}, nil
}
