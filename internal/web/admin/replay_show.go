package admin

import (
	"net/http"

	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// ReplayPage is one replay: a progress bar that refreshes while it runs, its criteria and counts, and the
// deliveries it scheduled.
func (h *Handler) ReplayPage(w http.ResponseWriter, r *http.Request) {
	id, err := core.PathID(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	ctx := r.Context()
	rep, err := h.Replays.Get(ctx, id, nil)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	names, _, err := h.tenantNames(ctx)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	dels, err := h.Replays.Deliveries(ctx, id, core.ReplayPageSize, cursor)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	p := templates.ReplayPage{
		Layout: h.adminLayout(r, templates.NavReplays, "Replay "+core.ShortID(id),
			templates.Crumb{Label: "Replays", Href: "/admin/replays"}, templates.Crumb{Label: "Replay " + core.ShortID(id)}),
	}
	h.FillReplayPage(&p, rep, names, dels, "/admin/replays/"+id.String(), cursor)
	h.Render(w, r, http.StatusOK, templates.ReplayView(p))
}
