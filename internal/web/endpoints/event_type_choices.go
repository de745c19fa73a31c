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
	g := byGroup(choices, chosen, chosenPatterns)
	placed, order := g.placeWildcards()
	wildcards := map[string][]templates.EventTypeWildcard{}
	for _, pat := range order {
		prefix := strings.TrimSuffix(pat, "*")
		wildcards[placed[pat]] = append(wildcards[placed[pat]], templates.EventTypeWildcard{
			Pattern: pat, Prefix: prefix, Label: "Every " + strings.TrimSuffix(prefix, ".") + " event",
			Checked: slices.Contains(chosen, pat), CoveredBy: coveringPattern(pat, chosenPatterns),
		})
	}
	names := slices.Collect(maps.Keys(g.options))
	for name := range wildcards {
		if g.options[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	groups := make([]templates.EventTypeGroup, 0, len(names))
	for _, name := range names {
		eg := templates.EventTypeGroup{Name: g.spelling[name], Wildcards: wildcards[name]}
		slices.SortFunc(eg.Wildcards, func(a, b templates.EventTypeWildcard) int { return cmp.Compare(a.Pattern, b.Pattern) })
		for _, n := range slices.Sorted(maps.Keys(g.options[name])) {
			eg.Options = append(eg.Options, g.options[name][n])
		}
		groups = append(groups, eg)
	}
	return groups
}

// typeGroups are the choices' types by group (by the group's name in lower case), each group's spelling,
// and the wildcards offered among the choices.
type typeGroups struct {
	options  map[string]map[string]templates.EventTypeOption
	spelling map[string]string
	offered  []string
}

// byGroup sorts the choices' types into their groups, checking the chosen ones and those a chosen wildcard
// covers; wildcards among the choices are set aside (offered).
func byGroup(choices []eventTypeChoice, chosen, chosenPatterns []string) typeGroups {
	g := typeGroups{options: map[string]map[string]templates.EventTypeOption{}, spelling: map[string]string{}}
	for _, c := range choices {
		if isPattern(c.Name) {
			if !slices.Contains(g.offered, c.Name) {
				g.offered = append(g.offered, c.Name)
			}
			continue
		}
		name := c.Group
		if name == "" {
			name, _, _ = strings.Cut(c.Name, ".")
		}
		key := strings.ToLower(name)
		if g.options[key] == nil {
			g.options[key] = map[string]templates.EventTypeOption{}
			g.spelling[key] = name
		}
		o := g.options[key][c.Name]
		o.Name, o.Description = c.Name, cmp.Or(o.Description, c.Description)
		o.Checked = slices.Contains(chosen, c.Name)
		o.CoveredBy = coveringPattern(c.Name, chosenPatterns)
		g.options[key][c.Name] = o
	}
	return g
}

// placeWildcards says where each wildcard is offered (placed: pattern → group), in the order they were
// placed: a type's first part in the first group (by name) with such a type, then the offered ones where
// they cover something, else beside their first part's wildcard, else under a group named by their first
// part (added to spelling).
func (g typeGroups) placeWildcards() (map[string]string, []string) {
	placed := map[string]string{}
	var order []string
	place := func(pattern, group string) {
		if _, ok := placed[pattern]; !ok {
			placed[pattern] = group
			order = append(order, pattern)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(g.options)) {
		for _, n := range slices.Sorted(maps.Keys(g.options[name])) {
			if first, _, dotted := strings.Cut(n, "."); dotted {
				place(first+".*", name) // a name without a dot has no part that others could share
			}
		}
	}
	slices.Sort(g.offered)
	for _, pat := range g.offered {
		group := g.covering(pat)
		if group == "" {
			// Covering no known type: beside its first part's wildcard when there is one.
			first, _, _ := strings.Cut(pat, ".")
			group = cmp.Or(placed[first+".*"], strings.ToLower(first))
			if g.spelling[group] == "" {
				g.spelling[group] = first
			}
		}
		place(pat, group)
	}
	return placed, order
}

// covering is the first group (by name) holding a type that pattern covers, or "".
func (g typeGroups) covering(pattern string) string {
	for _, name := range slices.Sorted(maps.Keys(g.options)) {
		for n := range g.options[name] {
			if coveringPattern(n, []string{pattern}) != "" {
				return name
			}
		}
	}
	return ""
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
