package web

import (
	"bytes"
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/catalogue/schema"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// eventTypes is /event-types: the event catalogue grouped as the platform grouped it, each type with its
// fields and example, and Send example to one of the tenant's subscriptions. ?q= keeps the types whose
// name contains it (the page's own filter, so it works without script). Archived types are not shown.
func (h *Handler) eventTypes(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	u := currentUser(r)
	tenantID, hasTenant := tenantOf(u)
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if !utf8.ValidString(q) || strings.ContainsRune(q, 0) {
		h.fail(w, r, fault.Invalid("the search must be text without NUL characters"))
		return
	}
	p := templates.CataloguePage{
		Layout: h.layout(r, "Event types", templates.Crumb{Label: "Event types"}),
		Query:  q, Operator: u.Admin, HasTenant: hasTenant,
	}
	var types []catalogue.EventType
	if h.catalogue != nil {
		var err error
		if types, err = h.catalogue.List(ctx, false); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	p.Total = len(types)
	if hasTenant {
		subs, err := h.subs.List(ctx, tenantID)
		if err != nil {
			h.fail(w, r, err)
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
	h.render(w, r, http.StatusOK, templates.Catalogue(p))
}

// catalogueType is one type as the page shows it; id prefixes its elements' ids.
func (h *Handler) catalogueType(r *http.Request, t catalogue.EventType, id string) templates.CatalogueType {
	v := templates.CatalogueType{
		ID: id, Name: t.Name, Description: t.Description, Deprecated: t.Deprecated,
		HasSchema: !isJSONNull(t.Schema), SendAction: "/event-types/" + url.PathEscape(t.Name) + "/send",
	}
	if v.HasSchema {
		v.Schema = prettyJSON(t.Schema)
		fields, complete, err := schema.Fields(t.Schema)
		switch {
		case err != nil:
			// Stored schemas compiled when they were registered, so this is not expected; the schema itself
			// is still shown below the note.
			h.log.Warn("event type's schema could not be listed as fields", "event_type", t.Name, "err", err)
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
		v.Example = prettyJSON(t.Example)
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
		t := templates.SendTarget{ID: s.ID.String(), Label: cmp.Or(s.Description, s.URL)}
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

// sendExample is POST /event-types/{name}/send: the type's example payload as an event of that type, to
// the subscription_id subscription only (whatever its event types, as Send test event), recorded in the
// activity log as example_event.sent; then the delivery it made (303). An unknown or archived type, or a
// subscription that is not the tenant's, is the 404 page; a type without an example is 400.
func (h *Handler) sendExample(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	// A name with a slash comes escaped (a%2Fb), as links to this page write it.
	name := httpx.PathValue(r, "name")
	var t catalogue.EventType
	var err error = fault.Missing("event type")
	if h.catalogue != nil {
		t, err = h.catalogue.Get(ctx, name)
	}
	if err == nil && t.Archived {
		err = fault.Missing("event type")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if isJSONNull(t.Example) {
		h.fail(w, r, fault.Invalid("event type %s has no example to send: the platform registered none", t.Name))
		return
	}
	tenantID, s, err := h.formSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back := "/event-types"
	deliveryID, ok := h.sendOne(w, r, tenantID, s, t.Name, t.Example, activity.ExampleEventSent, "Example", back)
	if !ok {
		return
	}
	msg := "Sent the catalogue's example of " + t.Name + " (example data, not a real event) to this subscription only."
	if s.State == subscriptions.Paused {
		msg = "Queued the catalogue's example of " + t.Name + " (example data, not a real event) for this subscription only; it waits until you resume the subscription."
	}
	h.setFlash(r, "success", msg)
	http.Redirect(w, r, "/deliveries/"+deliveryID, http.StatusSeeOther)
}

// formSubscription loads the subscription_id form field's subscription as customerSubscription loads a
// path's: the user's tenant's (anything else is NOT_FOUND), or for an operator whichever tenant's it is.
// A missing or malformed id is INVALID_REQUEST.
func (h *Handler) formSubscription(r *http.Request) (uuid.UUID, subscriptions.Subscription, error) {
	raw := strings.TrimSpace(r.PostForm.Get("subscription_id"))
	if raw == "" {
		return uuid.Nil, subscriptions.Subscription{}, fault.Invalid("choose a subscription to send the example to")
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, subscriptions.Subscription{}, fault.Invalid("subscription_id must be a subscription's id")
	}
	u := currentUser(r)
	tenantID, ok := tenantOf(u)
	if u.Admin {
		if tenantID, err = h.subs.TenantOf(r.Context(), id); err != nil {
			return uuid.Nil, subscriptions.Subscription{}, err
		}
		ok = true
	}
	if !ok {
		return uuid.Nil, subscriptions.Subscription{}, fault.Missing("subscription")
	}
	s, err := h.subs.Get(r.Context(), tenantID, id)
	return tenantID, s, err
}
