package endpoints

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/web/deliveries"
	"github.com/hookline/hookline/web/templates"
)

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
	if h.Catalogue != nil {
		types, err := h.Catalogue.List(ctx, false)
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
	names, err := h.Dels.EventTypes(ctx, tenantID, nil, deliveries.TypesUpTo)
	if err != nil {
		return nil, err
	}
	subs, err := h.Subs.List(ctx, tenantID)
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
