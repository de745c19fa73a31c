package eventtypes

import (
	"bytes"
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/catalogue/schema"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// EventTypes is /event-types: the event catalogue grouped as the platform grouped it, each type with its
// fields and example, and Send example to one of the tenant's subscriptions. ?q= keeps the types whose
// name contains it (the page's own filter, so it works without script). Archived types are not shown.
func (h *Handler) EventTypes(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	u := core.Caller(r)
	tenantID, hasTenant := u.Tenant()
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if !utf8.ValidString(q) || strings.ContainsRune(q, 0) {
		h.Fail(w, r, fault.Invalid("the search must be text without NUL characters"))
		return
	}
	p := templates.CataloguePage{
		Layout: h.Layout(r, "Event types", templates.Crumb{Label: "Event types"}),
		Query:  q, Operator: u.Admin, HasTenant: hasTenant,
	}
	var types []catalogue.EventType
	if h.Catalogue != nil {
		var err error
		if types, err = h.Catalogue.List(ctx, false); err != nil {
			h.Fail(w, r, err)
			return
		}
	}
	p.Total = len(types)
	if hasTenant {
		subs, err := h.Subs.List(ctx, tenantID)
		if err != nil {
			h.Fail(w, r, err)
			return
		}
		p.Targets = sendTargets(subs)
	}
	p.CanSend = slices.ContainsFunc(p.Targets, func(t templates.SendTarget) bool { return !t.Disabled }) && !p.ReadOnly
	needle := strings.ToLower(q)
	for _, t := range types {
		if needle != "" && !strings.Contains(strings.ToLower(t.Name), needle) {
			continue
		}
		// The catalogue lists a group's types together and spells the group one way; compared without
		// case all the same, as groups are one whatever their capitalisation.
		if n := len(p.Groups); n == 0 || !strings.EqualFold(p.Groups[n-1].Name, t.Group) {
			p.Groups = append(p.Groups, templates.CatalogueGroup{Name: t.Group, ID: "group-" + strconv.Itoa(n+1)})
		}
		g := &p.Groups[len(p.Groups)-1]
		g.Types = append(g.Types, h.catalogueType(r, t, "et-"+strconv.Itoa(p.Shown+1)))
		p.Shown++
	}
	h.Render(w, r, http.StatusOK, templates.Catalogue(p))
}

// catalogueType is one type as the page shows it; id prefixes its elements' ids.
func (h *Handler) catalogueType(r *http.Request, t catalogue.EventType, id string) templates.CatalogueType {
	v := templates.CatalogueType{
		ID: id, Name: t.Name, Description: t.Description, Deprecated: t.Deprecated,
		HasSchema: !isJSONNull(t.Schema), SendAction: "/event-types/" + url.PathEscape(t.Name) + "/send",
	}
	if v.HasSchema {
		v.Schema = core.PrettyJSON(t.Schema)
		fields, complete, err := schema.Fields(t.Schema)
		switch {
		case err != nil:
			// Stored schemas compiled when they were registered, so this is not expected; the schema itself
			// is still shown below the note.
			h.Log.Warn("event type's schema could not be listed as fields", "event_type", t.Name, "err", err)
			v.FieldsNote = "This schema could not be listed as fields; it is shown as JSON below."
		case !complete:
			v.FieldsNote = "This schema is larger than this page lists: the first " + strconv.Itoa(len(fields)) + " fields are shown, and the whole schema as JSON below."
		}
		for _, f := range fields {
			v.Fields = append(v.Fields, templates.CatalogueField{Path: f.Path, Type: f.Type, Required: f.Required,
				Description: f.Description, Enum: f.Enum, Bounds: f.Bounds})
		}
		if err == nil && len(v.Fields) == 0 && complete {
			v.FieldsNote = "The schema describes no fields of the payload."
		}
	}
	if !isJSONNull(t.Example) {
		v.Example = core.PrettyJSON(t.Example)
	}
	return v
}

func isJSONNull(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || bytes.Equal(b, []byte("null"))
}

// sendTargets are the subscriptions an example can be sent to, as the Send form lists them: by name, each
// saying when it would not deliver at once (paused: it waits) or at all (disabled: a disabled choice).
func sendTargets(subs []subscriptions.Subscription) []templates.SendTarget {
	out := make([]templates.SendTarget, 0, len(subs))
	for _, s := range subs {
		t := templates.SendTarget{ID: s.ID.String(), Label: cmp.Or(s.Description, s.URL, templates.PollingName)}
		switch s.State {
		case subscriptions.Paused:
			t.Label += " (paused: it waits until you resume)"
		case subscriptions.Disabled:
			t.Label += " (disabled: takes no deliveries)"
			t.Disabled = true
		}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b templates.SendTarget) int {
		return cmp.Compare(strings.ToLower(a.Label), strings.ToLower(b.Label))
	})
	if i := slices.IndexFunc(out, func(t templates.SendTarget) bool { return !t.Disabled }); i >= 0 {
		out[i].Selected = true
	}
	return out
}
