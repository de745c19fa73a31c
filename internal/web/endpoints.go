package web

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// Endpoint self-service: customers add, change and delete their subscriptions and see or rotate their
// signing secrets. Every field is checked by subscriptions' own validation (the API's), whose
// FieldErrors put each message beside its field; this file only reads the form and renders.

// emptyHeaderRows is how many blank custom header rows the form offers for adding headers.
const emptyHeaderRows = 2

// eventTypeChoice is one event type the form offers. Group and Description are optional: the event
// catalogue, when there is one, adds its types here with both; without it the group is the name's part
// before the first dot.
type eventTypeChoice struct {
	Name        string
	Group       string
	Description string
}

// eventTypeChoices are the event catalogue's types (in their groups, with their descriptions), then the
// types the tenant already receives that the catalogue lacks (the newest deliveries' types and those its
// subscriptions name), plus chosen, the form's own choices, so that nothing chosen is left unshown.
func (h *Handler) eventTypeChoices(ctx context.Context, tenantID uuid.UUID, chosen []string) ([]eventTypeChoice, error) {
	var out []eventTypeChoice
	listed := map[string]bool{}
	if h.catalogue != nil {
		types, err := h.catalogue.List(ctx, false)
		if err != nil {
			return nil, err
		}
		for _, t := range types {
			if t.Deprecated && !slices.Contains(chosen, t.Name) {
				continue // not offered for new choices; kept where already chosen
			}
			out = append(out, eventTypeChoice{Name: t.Name, Group: t.Group, Description: t.Description})
			listed[t.Name] = true
		}
	}
	names, err := h.dels.EventTypes(ctx, tenantID, nil, typesUpTo)
	if err != nil {
		return nil, err
	}
	subs, err := h.subs.List(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	for _, s := range subs {
		names = append(names, s.EventTypes...)
	}
	names = append(names, chosen...)
	for _, n := range names {
		if n != "" && !brand.IsTestEventType(n) && !listed[n] {
			out = append(out, eventTypeChoice{Name: n})
		}
	}
	return out, nil
}

// groupEventTypes lays choices out by group (sorted, each name once), checking the chosen ones. Groups
// are one whatever their capitalisation, spelled as the first choice of the group spells it (the
// catalogue's types come first, in the catalogue's spelling).
//
// Wildcards ("invoice.*") are not types of a group of their own: each group offers "Every invoice event"
// for the first part of its types' names (in the first group that has such types), and any other
// wildcard offered (chosen, or another subscription's) sits in the first group holding a type it covers,
// else beside its first part's wildcard, else in a group named by its first part. A type (or narrower wildcard) that a chosen wildcard covers is
// shown checked as covered by it, not as left out.
func groupEventTypes(choices []eventTypeChoice, chosen []string) []templates.EventTypeGroup {
	var chosenPatterns []string
	for _, c := range chosen {
		if isPattern(c) {
			chosenPatterns = append(chosenPatterns, c)
		}
	}
	byGroup := map[string]map[string]templates.EventTypeOption{} // by the group's name in lower case
	spelling := map[string]string{}
	var offeredPatterns []string
	for _, c := range choices {
		if isPattern(c.Name) {
			if !slices.Contains(offeredPatterns, c.Name) {
				offeredPatterns = append(offeredPatterns, c.Name)
			}
			continue
		}
		g := c.Group
		if g == "" {
			g, _, _ = strings.Cut(c.Name, ".")
		}
		key := strings.ToLower(g)
		if byGroup[key] == nil {
			byGroup[key] = map[string]templates.EventTypeOption{}
			spelling[key] = g
		}
		o := byGroup[key][c.Name]
		o.Name, o.Description = c.Name, cmp.Or(o.Description, c.Description)
		o.Checked = slices.Contains(chosen, c.Name)
		o.CoveredBy = coveringPattern(c.Name, chosenPatterns)
		byGroup[key][c.Name] = o
	}
	// Where each wildcard is offered: a type's first part in the first group (by name) with such a type,
	// then the others where they cover something, else beside their first part's wildcard, else under a
	// group named by their first part.
	placed := map[string]string{}
	var order []string
	place := func(pattern, group string) {
		if _, ok := placed[pattern]; !ok {
			placed[pattern] = group
			order = append(order, pattern)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		for _, n := range slices.Sorted(maps.Keys(byGroup[g])) {
			if first, _, dotted := strings.Cut(n, "."); dotted {
				place(first+".*", g) // a name without a dot has no part that others could share
			}
		}
	}
	slices.Sort(offeredPatterns)
	for _, pat := range offeredPatterns {
		group := ""
		for _, g := range slices.Sorted(maps.Keys(byGroup)) {
			for n := range byGroup[g] {
				if coveringPattern(n, []string{pat}) != "" {
					group = g
					break
				}
			}
			if group != "" {
				break
			}
		}
		if group == "" {
			// Covering no known type: beside its first part's wildcard when there is one.
			first, _, _ := strings.Cut(pat, ".")
			group = cmp.Or(placed[first+".*"], strings.ToLower(first))
			if spelling[group] == "" {
				spelling[group] = first
			}
		}
		place(pat, group)
	}
	wildcards := map[string][]templates.EventTypeWildcard{}
	for _, pat := range order {
		prefix := strings.TrimSuffix(pat, "*")
		wildcards[placed[pat]] = append(wildcards[placed[pat]], templates.EventTypeWildcard{
			Pattern: pat, Prefix: prefix, Label: "Every " + strings.TrimSuffix(prefix, ".") + " event",
			Checked: slices.Contains(chosen, pat), CoveredBy: coveringPattern(pat, chosenPatterns),
		})
	}
	names := slices.Collect(maps.Keys(byGroup))
	for g := range wildcards {
		if byGroup[g] == nil {
			names = append(names, g)
		}
	}
	slices.Sort(names)
	groups := make([]templates.EventTypeGroup, 0, len(names))
	for _, name := range names {
		g := templates.EventTypeGroup{Name: spelling[name], Wildcards: wildcards[name]}
		slices.SortFunc(g.Wildcards, func(a, b templates.EventTypeWildcard) int { return cmp.Compare(a.Pattern, b.Pattern) })
		for _, n := range slices.Sorted(maps.Keys(byGroup[name])) {
			g.Options = append(g.Options, byGroup[name][n])
		}
		groups = append(groups, g)
	}
	return groups
}

// isPattern reports whether an event type filter is a wildcard ("invoice.*": every type starting with
// "invoice.").
func isPattern(t string) bool { return strings.HasSuffix(t, ".*") }

// coveringPattern is the broadest of patterns, other than name itself, that covers name (an exact type or
// a narrower pattern), or "" when none does. A pattern covers every type starting with its prefix, as the
// fan-out matches it.
func coveringPattern(name string, patterns []string) string {
	best := ""
	for _, p := range patterns {
		if p != name && strings.HasPrefix(name, strings.TrimSuffix(p, "*")) && (best == "" || len(p) < len(best)) {
			best = p
		}
	}
	return best
}

// endpointForm is what the form posted, read but not yet checked.
type endpointForm struct {
	url, description, rate string
	eventTypes             []string
	headerNames            []string
	headers                map[string]string
	// problems the form itself has (not the API's rules): a header value without a name, a name twice,
	// a rate that is not a number.
	headersError, rateError string
}

// readEndpointForm reads the posted fields. "*" among the event types is the "All events" box: all
// of them, as none chosen is; a group's "Every … event" box posts its wildcard ("invoice.*").
func readEndpointForm(r *http.Request) endpointForm {
	f := endpointForm{
		url:         strings.TrimSpace(r.PostFormValue("url")),
		description: strings.TrimSpace(r.PostFormValue("description")),
		rate:        strings.TrimSpace(r.PostFormValue("rate_limit_per_second")),
		headers:     map[string]string{},
		eventTypes:  []string{},
	}
	for _, t := range r.PostForm["event_types"] {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(f.eventTypes, t) {
			f.eventTypes = append(f.eventTypes, t)
		}
	}
	if slices.Contains(f.eventTypes, "*") {
		f.eventTypes = []string{}
	}
	// A type (or narrower wildcard) that a chosen wildcard covers is already received through it: saved
	// once, as the wildcard. (With script, the form disables covered boxes; without, both may be posted.)
	var patterns []string
	for _, t := range f.eventTypes {
		if isPattern(t) {
			patterns = append(patterns, t)
		}
	}
	f.eventTypes = slices.DeleteFunc(f.eventTypes, func(t string) bool { return coveringPattern(t, patterns) != "" })
	names, values := r.PostForm["header_name"], r.PostForm["header_value"]
	seen := map[string]bool{}
	for i, name := range names {
		name = strings.TrimSpace(name)
		value := ""
		if i < len(values) {
			value = values[i]
		}
		if name == "" {
			if value != "" && f.headersError == "" {
				f.headersError = "A header value was typed without a name: give it a name, or leave both empty."
			}
			continue
		}
		key := http.CanonicalHeaderKey(name)
		if seen[key] && f.headersError == "" {
			f.headersError = name + " is listed twice: keep one row for it."
		}
		seen[key] = true
		f.headerNames = append(f.headerNames, name)
		f.headers[name] = value
	}
	return f
}

// input is the form as the service takes it. A subscription's form sends every field: an empty rate
// limit removes the limit, no headers removes them all; with keep, an empty header value keeps the
// stored one.
func (f endpointForm) input(keep bool) (subscriptions.Input, string) {
	in := subscriptions.Input{URL: &f.url, Description: &f.description, EventTypes: &f.eventTypes, Headers: &f.headers,
		KeepHeaderValues: keep}
	if f.rate == "" {
		in.ClearRateLimit = true
		return in, ""
	}
	n, err := strconv.Atoi(f.rate)
	if err != nil {
		return in, sprintf("Enter a whole number from 1 to %d, or leave it empty for no limit.", subscriptions.MaxRatePerSecond)
	}
	in.RateLimitPerSecond = &n
	return in, ""
}

// formPage builds the form's page; sub is the stored subscription when editing.
func (h *Handler) formPage(r *http.Request, tenantID uuid.UUID, f endpointForm, sub *subscriptions.Subscription) (templates.EndpointFormPage, error) {
	choices, err := h.eventTypeChoices(r.Context(), tenantID, f.eventTypes)
	if err != nil {
		return templates.EndpointFormPage{}, err
	}
	p := templates.EndpointFormPage{
		URL: f.url, Description: f.description, RateLimit: f.rate,
		AllEvents: len(f.eventTypes) == 0, Groups: groupEventTypes(choices, f.eventTypes),
		MaxRate: subscriptions.MaxRatePerSecond, MaxHeaders: subscriptions.MaxHeaders,
		HeadersError: f.headersError, RateLimitError: f.rateError,
	}
	stored := map[string]bool{}
	if sub != nil {
		for _, n := range sub.HeaderNames {
			stored[n] = true
		}
		base := "/subscriptions/" + sub.ID.String()
		p.Edit, p.Action, p.Cancel = true, base, base
		title, crumb := "Edit "+subName(*sub), "Edit"
		if h.readOnly(r) {
			// Someone who may only look is not editing: the page is the endpoint's settings.
			title, crumb = "Settings of "+subName(*sub), "Settings"
		}
		p.Layout = h.tenantLayout(r, tenantID, title, append(h.tenantCrumbs(r, tenantID),
			templates.Crumb{Label: subName(*sub), Href: base}, templates.Crumb{Label: crumb})...)
	} else {
		p.Action, p.Cancel = "/subscriptions", "/"
		p.Layout = h.tenantLayout(r, tenantID, "Add endpoint", append(h.tenantCrumbs(r, tenantID), templates.Crumb{Label: "Add endpoint"})...)
	}
	for _, n := range f.headerNames {
		p.Headers = append(p.Headers, templates.HeaderRow{Name: n, Stored: stored[http.CanonicalHeaderKey(n)]})
	}
	if !p.ReadOnly {
		for range emptyHeaderRows {
			p.Headers = append(p.Headers, templates.HeaderRow{})
		}
	}
	return p, nil
}

// formOf is a stored subscription as the form shows it (header values never).
func formOf(s subscriptions.Subscription) endpointForm {
	f := endpointForm{url: s.URL, description: s.Description, eventTypes: s.EventTypes, headerNames: s.HeaderNames}
	if s.RateLimitPerSecond != nil {
		f.rate = strconv.Itoa(*s.RateLimitPerSecond)
	}
	return f
}

// newEndpoint is GET /subscriptions/new: the empty form.
func (h *Handler) newEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := tenantOf(currentUser(r))
	if !ok {
		h.notFound(w, r)
		return
	}
	p, err := h.formPage(r, tenantID, endpointForm{eventTypes: []string{}}, nil)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.EndpointForm(p))
}

// createEndpoint is POST /subscriptions: a new subscription, then its page (303); a refused field shows
// the form again with the message beside it (400), nothing saved.
func (h *Handler) createEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := tenantOf(currentUser(r))
	if !ok {
		h.notFound(w, r)
		return
	}
	f := readEndpointForm(r)
	in, rateError := f.input(false)
	f.rateError = rateError
	var err error
	var s subscriptions.Subscription
	if f.headersError == "" && f.rateError == "" {
		// The first secret the API answers here is not shown: it is one Reveal away, in a POST's answer.
		s, _, err = h.subs.Create(r.Context(), tenantID, in)
	}
	if err == nil && f.headersError == "" && f.rateError == "" {
		h.setFlash(r, "success", "Endpoint added. It receives events from now on; reveal its signing secret below to check their signatures.")
		http.Redirect(w, r, "/subscriptions/"+s.ID.String(), http.StatusSeeOther)
		return
	}
	h.refuseEndpointForm(w, r, tenantID, f, nil, err)
}

// editEndpoint is GET /subscriptions/{id}/edit: the form with the subscription's settings.
func (h *Handler) editEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p, err := h.formPage(r, tenantID, formOf(s), &s)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.EndpointForm(p))
}

// updateEndpoint is POST /subscriptions/{id}: the form's settings replace the stored ones (a header's
// empty value keeps its stored value), then the subscription's page (303).
func (h *Handler) updateEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := readEndpointForm(r)
	in, rateError := f.input(true)
	f.rateError = rateError
	if f.headersError == "" && f.rateError == "" {
		_, err = h.subs.Update(r.Context(), tenantID, s.ID, in)
		if err == nil {
			h.setFlash(r, "success", "Saved. The changes apply to deliveries from now on.")
			http.Redirect(w, r, "/subscriptions/"+s.ID.String(), http.StatusSeeOther)
			return
		}
	}
	h.refuseEndpointForm(w, r, tenantID, f, &s, err)
}

// refuseEndpointForm shows the form again (400) with the refusal beside its field: err is the service's
// (a FieldError, or a refusal of the whole form such as the limit), or nil when the form's own reading
// found the problem. Anything else is an error page.
func (h *Handler) refuseEndpointForm(w http.ResponseWriter, r *http.Request, tenantID uuid.UUID, f endpointForm, sub *subscriptions.Subscription, err error) {
	fe := fault.As(err)
	if err != nil && (fe == nil || fe.Code != fault.InvalidRequest) {
		h.fail(w, r, err)
		return
	}
	p, perr := h.formPage(r, tenantID, f, sub)
	if perr != nil {
		h.fail(w, r, perr)
		return
	}
	var field *subscriptions.FieldError
	switch {
	case errors.As(err, &field):
		switch field.Field {
		case "url":
			p.URLError = field.Message
		case "description":
			p.DescriptionError = field.Message
		case "event_types":
			p.EventTypesError = field.Message
		case "headers":
			p.HeadersError = field.Message
		case "rate_limit_per_second":
			p.RateLimitError = field.Message
		default:
			p.FormError = field.Message
		}
	case fe != nil:
		p.FormError = fe.Message + "."
	}
	if len(f.headers) > 0 {
		// The values typed are not sent back into the page either.
		p.HeadersNote = "Header values are never shown again: type the values you had typed once more before saving."
		if sub != nil {
			p.HeadersNote = "Header values are never shown again: a saved header's value is kept if left empty; type any new value once more."
		}
	}
	h.render(w, r, http.StatusBadRequest, templates.EndpointForm(p))
}

// deleteEndpointPage is GET /subscriptions/{id}/delete: how many deliveries wait, what becomes of them,
// and the button.
func (h *Handler) deleteEndpointPage(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// Waiting and in flight counted in one statement (one moment), as the subscription's page counts them.
	states, err := h.dels.StateCounts(r.Context(), tenantID, []uuid.UUID{s.ID}, tabCountUpTo)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	st := states[s.ID]
	waiting, inFlight := countText(st.Pending.N, st.Pending.AtLeast), countText(st.InFlight.N, st.InFlight.AtLeast)
	base := "/subscriptions/" + s.ID.String()
	h.render(w, r, http.StatusOK, templates.DeleteEndpoint(templates.DeleteEndpointPage{
		Layout: h.tenantLayout(r, tenantID, "Delete "+subName(s), append(h.tenantCrumbs(r, tenantID),
			templates.Crumb{Label: subName(s), Href: base}, templates.Crumb{Label: "Delete"})...),
		Name: subName(s), URL: s.URL, Action: base + "/delete", Back: base, Waiting: waiting, InFlight: inFlight,
	}))
}

// deleteEndpoint is POST /subscriptions/{id}/delete: the API's DELETE (the same service call, so its
// waiting deliveries end the same way), then the list (303).
func (h *Handler) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.subs.Delete(r.Context(), tenantID, s.ID); err != nil {
		h.fail(w, r, err)
		return
	}
	h.setFlash(r, "success", "Deleted "+subName(s)+". It receives no more events; any deliveries that were waiting for it ended as dead (subscription deleted) and stay listed under Deliveries.")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// revealSecret is POST /subscriptions/{id}/secret: the signing secrets valid now, in this answer only
// (never a redirect, a flash or a log line).
func (h *Handler) revealSecret(w http.ResponseWriter, r *http.Request) {
	h.showSecrets(w, r, false)
}

// rotateSecret is POST /subscriptions/{id}/rotate-secret: a new secret, shown in this answer once; the
// old ones keep signing for subscriptions.SecretOverlap, and the page says until when.
func (h *Handler) rotateSecret(w http.ResponseWriter, r *http.Request) {
	h.showSecrets(w, r, true)
}

func (h *Handler) showSecrets(w http.ResponseWriter, r *http.Request, rotate bool) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	base := "/subscriptions/" + s.ID.String()
	p := templates.SecretPage{
		Layout: h.tenantLayout(r, tenantID, "Signing secret", append(h.tenantCrumbs(r, tenantID),
			templates.Crumb{Label: subName(s), Href: base}, templates.Crumb{Label: "Signing secret"})...),
		Name: subName(s), Back: base, RotateAction: base + "/rotate-secret", Rotated: rotate,
	}
	if rotate {
		// Only the new secret is shown (the old ones are a Reveal away). The old ones sign until at least
		// the rotation's moment plus the overlap: the moment is taken before the service's own, so the
		// page never promises a second more than they have.
		until := h.now().Add(subscriptions.SecretOverlap)
		fresh, err := h.subs.RotateSecret(r.Context(), tenantID, s.ID)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		p.Secrets, p.OldUntil = []templates.SecretRow{{Secret: fresh}}, h.timeView(until)
		h.render(w, r, http.StatusOK, templates.SigningSecret(p))
		return
	}
	secrets, err := h.subs.Secrets(r.Context(), tenantID, s.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, sec := range secrets {
		row := templates.SecretRow{Secret: sec.Secret}
		if sec.ExpiresAt != nil {
			row.Until = h.timeView(*sec.ExpiresAt)
		}
		p.Secrets = append(p.Secrets, row)
	}
	h.render(w, r, http.StatusOK, templates.SigningSecret(p))
}

// subName is what pages call a subscription: its description, else its URL (as templates.Subscription.Name).
func subName(s subscriptions.Subscription) string {
	return cmp.Or(s.Description, s.URL)
}
