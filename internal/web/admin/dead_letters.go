package admin

import (
	"fmt"
	"net/http"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/web/templates"
)

// deadPageSize is how many dead letters one page of /admin/dead lists.
const deadPageSize = 50

// countUpTo caps the "N matching deliveries" count, which would otherwise scan every match.
const countUpTo = 10000

// DeadLetters lists dead deliveries across tenants, filtered and keyset-paged, with a capped total.
func (h *Handler) DeadLetters(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, tenants, err := h.tenantNames(ctx)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f, form, err := parseDeadFilter(q, tenants)
	p := templates.DeadLettersPage{Layout: h.adminLayout(r, templates.NavDead, "Dead letters", templates.Crumb{Label: "Dead letters"}), Filter: form}
	status := http.StatusOK
	// ?limit= lets an operator page in smaller or larger steps (the service caps it).
	limit := deadPageSize
	if err == nil {
		limit, err = params.Form.Limit(q.Get("limit"), deadPageSize)
	}
	var page replays.DeadPage
	if err == nil {
		page, err = h.Replays.DeadLetters(ctx, f, limit, q.Get("cursor"), countUpTo)
	}
	if fe := fault.As(err); fe != nil && fe.Code == fault.InvalidRequest {
		p.Filter.Error, status = fe.Message, http.StatusBadRequest
	} else if err != nil {
		h.Fail(w, r, err)
		return
	}
	for _, d := range page.Items {
		p.Rows = append(p.Rows, h.deadRow(d))
	}
	if status == http.StatusOK {
		// Where the outage is: by hour and by tenant, endpoint and status, each group a replay away.
		o, err := h.Replays.DeadOverview(ctx, f)
		if err != nil {
			h.Fail(w, r, err)
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
	h.Render(w, r, status, templates.DeadLetters(p))
}
