package schema

import (
	"encoding/json"
	"fmt"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hookline/hookline/internal/fault"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The catalogue's limits. A schema, or a payload checked against one, costs memory and time in proportion to
// its size only while these hold: the validator clones a value's location for every error (a payload nested
// n deep costs n² to refuse), evaluates every branch of anyOf and oneOf and every $ref anew (a chain of
// anyOf with two $refs costs 2ⁿ), and compiles a schema nested n deep in more than n² steps. Each limit is
// checked before that work starts, and each refusal names its limit.
const (
	// MaxBytes bounds a schema (compact JSON, after an import resolved its $refs and YAML aliases): every
	// page and every listing of the catalogue carries it.
	MaxBytes = 64 << 10
	// MaxDepth bounds how deeply a schema document nests (objects and arrays), and MaxWeight
	// its size as the compiler's work grows with it: the values its objects and arrays hold (a property's
	// schema, a keyword's value, an element of allOf or enum) weigh 1, objects 5 and regular expressions 8
	// more, each times 1 + (depth/32)² as the compiler's work for a value grows with the square of its
	// depth. About 1,000 properties; compiling one costs at most about 10 MiB and tens of milliseconds.
	MaxDepth  = 128
	MaxWeight = 6000
	// MaxPayloadDepth bounds how deeply a payload checked against a schema nests (objects and arrays): its
	// root object is level 1.
	MaxPayloadDepth = 64
	// MaxNumberLength and MaxExponent bound the numbers of a schema and of a payload checked against one:
	// the validator compares numbers exactly, and the cost of 1e99999999 is its value, not its length.
	MaxNumberLength = 100
	MaxExponent     = 400
	// MaxEvaluations bounds how many (sub)schemas may apply to one value of a payload: each $ref, allOf,
	// anyOf, oneOf, not, if, then and else branch that applies to a value is evaluated against it again.
	MaxEvaluations = 1000
	// MaxCheckSteps is what checking one payload may cost, in steps: every value of the payload is half a
	// step, every (sub)schema evaluated against a value one step, and more for long strings against a
	// pattern, long enums, large objects and arrays, numbers against bounds and deep values. At most about
	// 50 ms and 10 MiB.
	MaxCheckSteps = 30_000
)

// maxAnalysisSteps bounds the work of finding a schema's MaxEvaluations (in steps of about a microsecond);
// a schema whose analysis would take longer is refused as too complex.
const maxAnalysisSteps = 400_000

// limitError is a refusal by one of the limits: INVALID_REQUEST saying which.
func limitError(format string, args ...any) error { return fault.Invalid(format, args...) }

// docSize is what scanJSON measured of a JSON document.
type docSize struct {
	// tokens counts its values and keys; weight is what compiling it as a schema costs (MaxWeight).
	tokens, weight int
}

// Weights of a schema's values (MaxWeight), measured on the compiler: each object is most likely a
// subschema, which the compiler checks against the metaschema and resolves, and each pattern (a pattern
// keyword's value, a patternProperties key) is a regular expression it compiles, in memory that grows
// with the size of its program (patternWeight).
const (
	weightValue  = 1
	weightObject = 5
)

// patternWeight is what compiling a regular expression of about size instructions weighs.
func patternWeight(size int) int { return 8 + size }

// MaxPatternSize bounds one regular expression of a schema (pattern, patternProperties), in instructions
// of its compiled program: a repeat {n} copies what it repeats n times, so `[a-z]{1,64}` is about 130 and
// a few dozen bytes of pattern can compile to megabytes. About 6 MiB at the limit.
const MaxPatternSize = 5000

// regexSize estimates the program size of a parsed regular expression, saturating at a million.
func regexSize(re *syntax.Regexp) int {
	n := 1
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune)
	case syntax.OpCharClass:
		n = 2 // one instruction however many ranges (they are shared), and the branch around it
	case syntax.OpRepeat:
		copies := re.Max
		if copies < 0 {
			copies = re.Min + 1
		}
		n = 1 + max(copies, 1)*regexSize(re.Sub[0])
	default:
		for _, sub := range re.Sub {
			n += regexSize(sub)
		}
	}
	return min(n, 1_000_000)
}

// checkPatterns finds the regular expressions of a decoded schema document (the values of pattern, the
// keys of patternProperties), refuses one larger than MaxPatternSize, and returns what compiling them
// weighs. A string that does not parse as one is left to the compiler to refuse.
func checkPatterns(doc any) (int, error) {
	weight := 0
	one := func(p string) error {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			return nil
		}
		size := regexSize(re)
		if size > MaxPatternSize {
			return limitError("schema has the pattern %q, which compiles to about %d instructions; the catalogue takes patterns of at most %d (a repeat {n} counts what it repeats n times)", truncateText(p, 60), size, MaxPatternSize)
		}
		weight += patternWeight(size)
		return nil
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if p, ok := e.(string); ok && k == "pattern" {
					if err := one(p); err != nil {
						return err
					}
				}
				if pp, ok := e.(map[string]any); ok && k == "patternProperties" {
					for p := range pp {
						if err := one(p); err != nil {
							return err
						}
					}
				}
				if err := walk(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range v {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := walk(doc)
	return weight, err
}

// truncateText is s cut to at most n bytes (on a character boundary), with "…" when cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// scanJSON checks a JSON document's nesting and numbers without parsing it into values, and measures it.
// what names the document in refusals ("schema", "example"). b must be valid JSON (it was compacted or
// parsed before); this only measures it.
func scanJSON(b []byte, maxDepth int, what string) (docSize, error) {
	var sh docSize
	depth := 0
	weighted := 0 // each value's weight times 1024 + its depth²: divided by 1024 at the end
	value := func(w int) {
		sh.tokens++
		if depth > 0 {
			weighted += w * (1024 + depth*depth)
		}
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			w := weightValue
			if c == '{' {
				w = weightObject
			}
			value(w)
			depth++
			if depth > maxDepth {
				return sh, limitError("%s is nested more than %d levels deep (objects and arrays), the most the catalogue allows", what, maxDepth)
			}
		case '}', ']':
			depth--
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			j := i + 1
			for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
				j++
			}
			if j < len(b) && b[j] == ':' {
				sh.tokens++ // a key
			} else {
				value(weightValue)
			}
		case 't', 'f', 'n':
			value(weightValue)
			for i+1 < len(b) && b[i+1] >= 'a' && b[i+1] <= 'z' {
				i++
			}
		default:
			if c == '-' || (c >= '0' && c <= '9') {
				value(weightValue)
				j := i
				for j < len(b) && strings.IndexByte("0123456789+-.eE", b[j]) >= 0 {
					j++
				}
				if err := checkNumber(b[i:j], what); err != nil {
					return sh, err
				}
				i = j - 1
			}
		}
	}
	sh.weight = weighted / 1024
	return sh, nil
}

// checkNumber refuses a number literal longer than MaxNumberLength or with an exponent beyond ±MaxExponent.
func checkNumber(num []byte, what string) error {
	if len(num) > MaxNumberLength {
		return limitError("%s has a number of more than %d characters (%s…); numbers may have at most %d", what, MaxNumberLength, num[:20], MaxNumberLength)
	}
	e := strings.IndexAny(string(num), "eE")
	if e < 0 {
		return nil
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(string(num[e+1:]), "+"))
	if err != nil || exp > MaxExponent || exp < -MaxExponent {
		return limitError("%s has the number %s, whose exponent is beyond ±%d (the limit, well past what a 64-bit float holds)", what, num, MaxExponent)
	}
	return nil
}

// graph is what the cost of a compiled schema depends on, found once when it compiles.
type graph struct {
	// dynamic lists the schemas a $dynamicRef to an anchor may land on, by anchor; recursive those a
	// $recursiveRef may (draft 2019-09). A reference is taken to land on all of them (an upper bound).
	dynamic   map[string][]*jsonschema.Schema
	recursive []*jsonschema.Schema
	// patternCost is a pattern's program size: matching a string costs about its length times that.
	patternCost map[string]int
}

// newGraph walks every schema reachable from root once.
func newGraph(root *jsonschema.Schema) *graph {
	g := &graph{dynamic: map[string][]*jsonschema.Schema{}, patternCost: map[string]int{}}
	seen := map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if s.DynamicAnchor != "" {
			g.dynamic[s.DynamicAnchor] = append(g.dynamic[s.DynamicAnchor], s)
		}
		if s.RecursiveAnchor {
			g.recursive = append(g.recursive, s)
		}
		if s.Pattern != nil {
			g.addPattern(s.Pattern.String())
		}
		for re := range s.PatternProperties {
			g.addPattern(re.String())
		}
		if s.DynamicRef != nil {
			walk(s.DynamicRef.Ref)
		}
		for _, c := range g.sameValue(s, nil) {
			walk(c)
		}
		for _, c := range childSchemas(s) {
			walk(c)
		}
	}
	walk(root)
	return g
}

func (g *graph) addPattern(p string) {
	if _, ok := g.patternCost[p]; ok {
		return
	}
	n := len(p)
	if re, err := syntax.Parse(p, syntax.Perl); err == nil {
		n = regexSize(re)
	}
	g.patternCost[p] = max(n, 1)
}

// sameValue lists the schemas that s applies to the value it is evaluated against, each once per time
// it applies. obj, when not nil, is that value (dependentSchemas apply only when it has their property);
// nil counts them all.
func (g *graph) sameValue(s *jsonschema.Schema, obj map[string]any) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(c ...*jsonschema.Schema) {
		for _, x := range c {
			if x != nil {
				out = append(out, x)
			}
		}
	}
	add(s.Ref, s.Not, s.If, s.Then, s.Else)
	add(s.AllOf...)
	add(s.AnyOf...)
	add(s.OneOf...)
	if s.RecursiveRef != nil {
		add(s.RecursiveRef)
		if g != nil {
			add(g.recursive...)
		}
	}
	if s.DynamicRef != nil {
		add(s.DynamicRef.Ref)
		if g != nil && s.DynamicRef.Anchor != "" {
			add(g.dynamic[s.DynamicRef.Anchor]...)
		}
	}
	for name, c := range s.DependentSchemas {
		if _, ok := obj[name]; ok || obj == nil {
			add(c)
		}
	}
	for name, d := range s.Dependencies {
		if c, isSchema := d.(*jsonschema.Schema); isSchema {
			if _, ok := obj[name]; ok || obj == nil {
				add(c)
			}
		}
	}
	return out
}

// childSchemas lists the schemas s applies to the members of an object or the elements of an array.
func childSchemas(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, c := range s.Properties {
		out = append(out, c)
	}
	for _, c := range s.PatternProperties {
		out = append(out, c)
	}
	out = append(out, schemaOf(s.AdditionalProperties), s.PropertyNames, s.UnevaluatedProperties,
		schemaOf(s.Items), schemaOf(s.AdditionalItems), s.Items2020, s.Contains, s.UnevaluatedItems)
	if list, ok := s.Items.([]*jsonschema.Schema); ok {
		out = append(out, list...)
	}
	out = append(out, s.PrefixItems...)
	return slices.DeleteFunc(out, func(c *jsonschema.Schema) bool { return c == nil })
}

// schemaOf is v when it is a schema (additionalProperties, items and additionalItems may be a boolean or
// a list instead).
func schemaOf(v any) *jsonschema.Schema {
	s, _ := v.(*jsonschema.Schema)
	return s
}

// prefix is s's positional item schemas: prefixItems, or items as an array in drafts before 2020-12.
func prefix(s *jsonschema.Schema) []*jsonschema.Schema {
	if list, ok := s.Items.([]*jsonschema.Schema); ok {
		return list
	}
	return s.PrefixItems
}

// rest is what s applies to the array elements past its prefix.
func rest(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, c := range []*jsonschema.Schema{s.Items2020, schemaOf(s.Items), schemaOf(s.AdditionalItems)} {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// analysis finds the most (sub)schemas that can apply to one value of any payload the limits allow, and
// refuses a schema where that passes MaxEvaluations. For each schema s and depth d it bounds E(s, d): how
// many evaluations a value d levels below one that s is evaluated against can meet. E(s, 0) is s with
// everything it applies in place ($ref, allOf, anyOf, oneOf...), each as many times as it is reached;
// E(s, d) is, over the property names (and "any other") and array positions one level down, the most that
// the schemas of that place bring, each with its own E(·, d-1). Summing each schema's own worst case makes
// it an upper bound, and memoizing by (schema, depth) keeps the work to about schemas × depth.
type analysis struct {
	g        *graph
	closures map[*jsonschema.Schema][]bound
	memo     map[depthKey]int
	steps    int
}

type depthKey struct {
	s *jsonschema.Schema
	d int
}

// bound is one (sub)schema and how many times it applies to the value.
type bound struct {
	s *jsonschema.Schema
	n int
}

func analyse(root *jsonschema.Schema, g *graph) error {
	a := &analysis{g: g, closures: map[*jsonschema.Schema][]bound{}, memo: map[depthKey]int{}}
	for d := range MaxPayloadDepth {
		e, err := a.evaluations(root, d)
		if err != nil {
			return err
		}
		if e > MaxEvaluations {
			where := "the payload itself"
			if d > 0 {
				where = fmt.Sprintf("a value %d levels below the payload's top", d)
			}
			return limitError("schema applies more than %d subschemas to one value of a payload (%s: each $ref, allOf, anyOf, oneOf, not, if, then and else branch counts, and branches that refer to branches multiply); the limit is %d", MaxEvaluations, where, MaxEvaluations)
		}
		if e == 0 {
			return nil // nothing applies this deep, nor deeper
		}
	}
	return nil
}

func (a *analysis) step(n int) error {
	a.steps += n
	if a.steps > maxAnalysisSteps {
		return limitError("schema is too complex for Hookline to bound what checking a payload against it costs (its $refs, allOf, anyOf and oneOf combine in too many ways); simplify it")
	}
	return nil
}

// saturated caps a count just past MaxEvaluations: past it, only "too many" matters.
func saturated(n int) int { return min(n, MaxEvaluations+1) }

// evaluations is E(s, d), saturated.
func (a *analysis) evaluations(s *jsonschema.Schema, d int) (int, error) {
	closure, err := a.closure(s)
	if err != nil {
		return 0, err
	}
	if d == 0 {
		total := 0
		for _, b := range closure {
			total = saturated(total + b.n)
		}
		return total, nil
	}
	key := depthKey{s, d}
	if e, ok := a.memo[key]; ok {
		return e, nil
	}
	e := func(c *jsonschema.Schema) (int, error) {
		if c == nil {
			return 0, nil
		}
		if err := a.step(1); err != nil {
			return 0, err
		}
		return a.evaluations(c, d-1)
	}
	// Objects: what applies to any property, plus the most that one named property adds.
	anyProperty, named := 0, map[string]int{}
	// Arrays: what applies to any element, plus the most that one position adds.
	anyElement, position := 0, map[int]int{}
	for _, b := range closure {
		for name, c := range b.s.Properties {
			n, err := e(c)
			if err != nil {
				return 0, err
			}
			named[name] = saturated(named[name] + b.n*n)
		}
		general := []*jsonschema.Schema{schemaOf(b.s.AdditionalProperties), b.s.UnevaluatedProperties, b.s.PropertyNames}
		for _, c := range b.s.PatternProperties {
			general = append(general, c)
		}
		for _, c := range general {
			n, err := e(c)
			if err != nil {
				return 0, err
			}
			anyProperty = saturated(anyProperty + b.n*n)
		}
		for i, c := range prefix(b.s) {
			n, err := e(c)
			if err != nil {
				return 0, err
			}
			position[i] = saturated(position[i] + b.n*n)
		}
		for _, c := range append(rest(b.s), b.s.Contains, b.s.UnevaluatedItems) {
			n, err := e(c)
			if err != nil {
				return 0, err
			}
			anyElement = saturated(anyElement + b.n*n)
		}
	}
	most := func(m map[string]int) int {
		out := 0
		for _, n := range m {
			out = max(out, n)
		}
		return out
	}
	mostAt := 0
	for _, n := range position {
		mostAt = max(mostAt, n)
	}
	total := saturated(max(anyProperty+most(named), anyElement+mostAt))
	a.memo[key] = total
	return total, nil
}

// closure is every (sub)schema evaluated against a value that s is evaluated against, s included, with
// how many times. More than MaxEvaluations in all, or a $ref that comes back to itself without going down
// a level (the validator would stop there and refuse every payload), refuses the schema.
func (a *analysis) closure(s *jsonschema.Schema) ([]bound, error) {
	if c, ok := a.closures[s]; ok {
		return c, nil
	}
	counts := map[*jsonschema.Schema]int{}
	var order []*jsonschema.Schema
	total := 0
	onPath := map[*jsonschema.Schema]bool{}
	var visit func(s *jsonschema.Schema) error
	visit = func(s *jsonschema.Schema) error {
		if onPath[s] {
			return limitError("schema refers back to itself without going down into a property or an item (%s), so no payload could satisfy it", strings.Replace(s.Location, schemaURL, "", 1))
		}
		if err := a.step(1); err != nil {
			return err
		}
		total++
		if total > MaxEvaluations {
			return limitError("schema applies more than %d subschemas to one value of a payload (each $ref, allOf, anyOf, oneOf, not, if, then and else branch counts, and branches that refer to branches multiply); the limit is %d", MaxEvaluations, MaxEvaluations)
		}
		if _, ok := counts[s]; !ok {
			order = append(order, s)
		}
		counts[s]++
		onPath[s] = true
		defer delete(onPath, s)
		for _, c := range a.g.sameValue(s, nil) {
			if err := visit(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(s); err != nil {
		return nil, err
	}
	out := make([]bound, 0, len(order))
	for _, x := range order {
		out = append(out, bound{x, counts[x]})
	}
	a.closures[s] = out
	return out, nil
}

// meter counts what checking one payload against a schema will cost, before the validator does it, by
// walking the payload the way the validator will (every branch taken, every pattern assumed to match
// where that is cheaper to assume): an upper bound, in steps. It stops as soon as the budget is spent.
type meter struct {
	g    *graph
	left int
}

// spend takes n steps; false when the budget is spent.
func (m *meter) spend(n int) bool {
	m.left -= n
	return m.left >= 0
}

// value evaluates s against v, depth levels down.
func (m *meter) value(s *jsonschema.Schema, v any, depth int) bool {
	if s.Bool != nil {
		return m.spend(1)
	}
	if !m.spend(m.cost(s, v, depth)) {
		return false
	}
	obj, _ := v.(map[string]any)
	for _, c := range m.g.sameValue(s, obj) {
		if !m.value(c, v, depth) {
			return false
		}
	}
	switch v := v.(type) {
	case map[string]any:
		return m.members(s, v, depth)
	case []any:
		return m.elements(s, v, depth)
	}
	return true
}

// cost is what evaluating s itself against v costs, depth levels down, without what s applies.
func (m *meter) cost(s *jsonschema.Schema, v any, depth int) int {
	// Every evaluation that fails clones the value's location: deep values cost more. Every branch of
	// anyOf and oneOf that fails is kept as the cause of the error, should the whole fail.
	cost := 1 + depth/16 + len(s.AnyOf) + len(s.OneOf)
	if s.Enum != nil {
		cost += len(s.Enum.Values) / 4
	}
	switch v := v.(type) {
	case map[string]any:
		cost += len(v)/4 + len(s.Required)/8
		for name := range v {
			for re := range s.PatternProperties {
				cost += 1 + len(name)*m.g.patternCost[re.String()]/2048
			}
		}
	case []any:
		cost += len(v) / 4
		if s.UniqueItems {
			cost += nodes(v) / 4
		}
	case string:
		cost += m.stringCost(s, v)
	case json.Number:
		// Compared exactly, as fractions: each comparison parses the number again.
		if s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil || s.MultipleOf != nil {
			cost++
		}
	}
	return cost
}

// stringCost is what s's string keywords cost against v.
func (m *meter) stringCost(s *jsonschema.Schema, v string) int {
	cost := 0
	if s.Pattern != nil {
		cost += len(v) * m.g.patternCost[s.Pattern.String()] / 2048
	}
	if s.MinLength != nil || s.MaxLength != nil || s.Format != nil || s.Const != nil || s.Enum != nil {
		cost += len(v) / 1024
	}
	if s.Format != nil && s.Format.Name == "regex" {
		// Drafts before 2019-09 assert formats: the string is compiled as a regular expression.
		cost += 2 + len(v)/64
		if re, err := syntax.Parse(v, syntax.Perl); err == nil {
			cost += regexSize(re) / 10
		}
	}
	return cost
}

// members evaluates what s applies to each member of obj.
func (m *meter) members(s *jsonschema.Schema, obj map[string]any, depth int) bool {
	for name, pv := range obj {
		evaluated := false
		if c := s.Properties[name]; c != nil {
			evaluated = true
			if !m.value(c, pv, depth+1) {
				return false
			}
		}
		for re, c := range s.PatternProperties {
			if re.MatchString(name) {
				evaluated = true
				if !m.value(c, pv, depth+1) {
					return false
				}
			}
		}
		if c := schemaOf(s.AdditionalProperties); c != nil && !evaluated {
			if !m.value(c, pv, depth+1) {
				return false
			}
		}
		if c := s.UnevaluatedProperties; c != nil && !m.value(c, pv, depth+1) {
			return false
		}
		if c := s.PropertyNames; c != nil && !m.value(c, name, depth+1) {
			return false
		}
	}
	return true
}

// elements evaluates what s applies to each element of arr.
func (m *meter) elements(s *jsonschema.Schema, arr []any, depth int) bool {
	p := prefix(s)
	for i, e := range arr {
		var apply []*jsonschema.Schema
		if i < len(p) {
			apply = append(apply, p[i])
		} else {
			apply = append(apply, rest(s)...)
		}
		for _, c := range append(apply, s.Contains, s.UnevaluatedItems) {
			if c != nil && !m.value(c, e, depth+1) {
				return false
			}
		}
	}
	return true
}

// nodes is how many values v holds, itself included.
func nodes(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := 1
		for _, e := range v {
			n += nodes(e)
		}
		return n
	case []any:
		n := 1
		for _, e := range v {
			n += nodes(e)
		}
		return n
	}
	return 1
}
