package admin

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// dryRunFilter reads ?dry_run=1: the audit log lists real replays by default and dry runs apart.
func dryRunFilter(r *http.Request) bool { return r.URL.Query().Get("dry_run") == "1" }

// ReplayLog is the audit log of replays, newest first; ?tenant= narrows it to one tenant's recovers.
func (h *Handler) ReplayLog(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	names, _, err := h.tenantNames(ctx)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	q := r.URL.Query()
	dry := dryRunFilter(r)
	f := replays.ReplayListFilter{Limit: core.ReplayPageSize, Cursor: q.Get("cursor"), DryRun: &dry}
	p := templates.ReplaysPage{Layout: h.adminLayout(r, templates.NavReplays, "Replays", templates.Crumb{Label: "Replays"}), DryRuns: dry}
	base, tab := "/admin/replays", url.Values{}
	tenantID, err := params.Form.ID("tenant", q.Get("tenant"))
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	if tenantID != nil {
		f.TenantID = tenantID
		p.Scope = "Recovers by " + names[*tenantID]
		tab.Set("tenant", tenantID.String())
	}
	p.RealHref = base
	if len(tab) > 0 {
		p.RealHref += "?" + tab.Encode()
	}
	tab.Set("dry_run", "1")
	p.DryHref = base + "?" + tab.Encode()
	if dry {
		base = p.DryHref
	} else {
		base = p.RealHref
	}
	page, err := h.Replays.List(ctx, f)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	for _, rep := range page.Items {
		p.Rows = append(p.Rows, h.ReplayRow(rep, names))
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	if page.NextCursor != "" {
		p.NextHref = base + sep + "cursor=" + page.NextCursor
	}
	if f.Cursor != "" {
		p.FirstHref = base
	}
	h.Render(w, r, http.StatusOK, templates.Replays(p))
}
