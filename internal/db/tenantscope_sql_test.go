package db_test

// The SQL side of TestEveryQueryNamesTheTenant: which table references of one statement are pinned to a
// tenant. Each statement is parsed by PostgreSQL's own parser (libpg_query through pg_query_go, the
// parser sqlc itself uses), so CTEs, LATERAL subqueries, sub-selects in any expression, joins and
// INSERT … SELECT are seen as PostgreSQL sees them; a text-level check would have had to guess which
// "tenant_id =" belongs to which table, and would have passed a predicate behind an OR.
//
// The parse tree is walked as pg_query's JSON (a node is {"Kind": {fields}}), which keeps the walker
// small: it looks at the few node kinds that bind tables and predicates, and descends generically through
// everything else to find nested SELECTs.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// jsonNode is one parse-tree node's fields.
type jsonNode = map[string]any

// kindOf splits a wrapped node {"Kind": {fields}} into its kind and fields ("" when v is not one).
func kindOf(v any) (string, jsonNode) {
	m, ok := v.(jsonNode)
	if !ok || len(m) != 1 {
		return "", nil
	}
	for k, inner := range m {
		if f, ok := inner.(jsonNode); ok && k != "" && k[0] >= 'A' && k[0] <= 'Z' {
			return k, f
		}
	}
	return "", nil
}

func items(n jsonNode, key string) []any { l, _ := n[key].([]any); return l }

func str(n jsonNode, key string) string { s, _ := n[key].(string); return s }

// names reads a list of String nodes (a qualified name, a ColumnRef's fields).
func names(list []any) []string {
	var out []string
	for _, it := range list {
		if k, f := kindOf(it); k == "String" {
			out = append(out, str(f, "sval"))
		} else if k == "A_Star" {
			out = append(out, "*")
		}
	}
	return out
}

// ref is one table (or CTE, subquery, function) named in a FROM, or the target of an INSERT, UPDATE or
// DELETE.
type ref struct {
	alias string
	table *relation // nil: a CTE, a subquery, a function or a table outside the schema (pg_catalog)
	body  []*level  // a CTE's or subquery's own statement
	cols  map[string]bool
	// strict: its tenant column equals a parameter, a constant or a strict reference's tenant column.
	// byKey: strict, or tied by a key (subscription_id = s.id, …) to a byKey reference.
	strict, byKey bool
}

func (r *ref) name() string {
	if r.table != nil && r.alias != r.table.name {
		return r.table.name + " " + r.alias
	}
	return r.alias
}

// level is one query level: a SELECT (one arm of a UNION), an UPDATE, a DELETE or an INSERT; columns of
// its refs are visible in it and in the levels nested in it.
type level struct {
	parent   *level
	refs     []*ref
	ctes     map[string]*ref
	children []*level
	outputs  map[string]bool // the names of its result columns (nil: not known)
}

// side is one side of an equality: a column of a reference, or a value that names no column at all (a
// parameter, a constant, an expression of those, a scalar sub-select judged as its own level).
type side struct {
	ref   *ref
	col   string
	value bool
}

// fact is a conjunct that ties two sides together. It pins only references of its own level (home): a
// sub-select's condition on an outer column restricts the sub-select, not the outer rows. only, when set,
// narrows that further: an outer join's condition restricts the nullable side, not the preserved one.
type fact struct {
	a, b side
	home *level
	only map[*ref]bool
}

type statement struct {
	schema   *schema
	levels   []*level
	facts    []fact
	subLinks map[float64][]*level // each sub-select's levels, by its SubLink's position in the text
	err      error
}

// analyse parses one query and finds, for every reference to a table of the schema, whether it is pinned
// to a tenant (strict) or tied to a pinned one by a key (byKey).
func analyse(s *schema, sql string) (*statement, error) {
	out, err := pg_query.ParseToJSON(sql)
	if err != nil {
		return nil, err
	}
	var tree struct {
		Stmts []struct{ Stmt any } `json:"stmts"`
	}
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		return nil, err
	}
	st := &statement{schema: s, subLinks: map[float64][]*level{}}
	for _, raw := range tree.Stmts {
		st.build(raw.Stmt, nil)
	}
	if st.err != nil {
		return nil, st.err
	}
	st.settle()
	return st, nil
}

func (st *statement) newLevel(parent *level) *level {
	l := &level{parent: parent, ctes: map[string]*ref{}}
	if parent != nil {
		parent.children = append(parent.children, l)
	}
	st.levels = append(st.levels, l)
	return l
}

// build adds the levels of one statement node (a SELECT, INSERT, UPDATE, DELETE, or anything else) and
// returns its outermost levels (two or more for a UNION).
func (st *statement) build(node any, parent *level) []*level {
	kind, n := kindOf(node)
	switch kind {
	case "SelectStmt":
		return st.buildSelect(n, parent)
	case "InsertStmt":
		return []*level{st.buildInsert(n, parent)}
	case "UpdateStmt", "DeleteStmt":
		return []*level{st.buildUpdateDelete(kind, n, parent)}
	default:
		// LISTEN, a utility statement: whatever tables it names are references that nothing pins.
		l := st.newLevel(parent)
		st.addRangeVars(l, node)
		return []*level{l}
	}
}

// addRangeVars adds every table a utility statement names. A RangeVar is wrapped where the tree allows
// any node and bare where it allows only a RangeVar (VACUUM's), so it is found by its relname.
func (st *statement) addRangeVars(l *level, v any) {
	switch x := v.(type) {
	case []any:
		for _, it := range x {
			st.addRangeVars(l, it)
		}
	case jsonNode:
		if _, ok := x["relname"].(string); ok {
			st.addRangeVar(l, x)
			return
		}
		for _, fv := range x {
			st.addRangeVars(l, fv)
		}
	}
}

func (st *statement) buildSelect(n jsonNode, parent *level) []*level {
	l := st.newLevel(parent)
	st.addWith(l, n)
	if op := str(n, "op"); op != "" && op != "SETOP_NONE" {
		// The WITH of a UNION is seen by both arms.
		left := st.build(jsonNode{"SelectStmt": n["larg"]}, l)
		return append(left, st.build(jsonNode{"SelectStmt": n["rarg"]}, l)...)
	}
	for _, item := range items(n, "fromClause") {
		st.addFrom(l, item)
	}
	st.addSubLinks(l, n, "fromClause", "withClause")
	st.addQuals(l, n["whereClause"], nil)
	l.outputs = outputsOf(l, items(n, "targetList"))
	return []*level{l}
}

func (st *statement) buildUpdateDelete(kind string, n jsonNode, parent *level) *level {
	l := st.newLevel(parent)
	st.addWith(l, n)
	if rv, ok := n["relation"].(jsonNode); ok {
		st.addRangeVar(l, rv)
	}
	from := "fromClause"
	if kind == "DeleteStmt" {
		from = "usingClause"
	}
	for _, item := range items(n, from) {
		st.addFrom(l, item)
	}
	st.addSubLinks(l, n, "relation", from, "withClause")
	st.addQuals(l, n["whereClause"], nil)
	l.outputs = outputsOf(l, items(n, "returningList"))
	return l
}

// buildInsert treats INSERT INTO t (c1, …) SELECT v1, … (or VALUES) as the conjuncts t.c1 = v1, …: the
// target is pinned when its tenant column gets a parameter or a pinned reference's tenant column.
func (st *statement) buildInsert(n jsonNode, parent *level) *level {
	l := st.newLevel(parent)
	st.addWith(l, n)
	rv, _ := n["relation"].(jsonNode)
	target := st.addRangeVar(l, rv)
	var cols []string
	for _, c := range items(n, "cols") {
		if _, f := kindOf(c); f != nil {
			cols = append(cols, str(f, "name"))
		}
	}
	st.addSubLinks(l, n, "relation", "selectStmt", "withClause")
	l.outputs = outputsOf(l, items(n, "returningList"))
	if n["selectStmt"] == nil {
		return l // DEFAULT VALUES
	}
	source := st.build(n["selectStmt"], l)[0]
	_, sel := kindOf(n["selectStmt"])
	only := map[*ref]bool{target: true}
	for _, row := range items(sel, "valuesLists") {
		_, list := kindOf(row)
		for i, v := range items(list, "items") {
			if i < len(cols) {
				st.facts = append(st.facts, fact{a: side{ref: target, col: cols[i]}, b: st.sideOf(source, v), home: l, only: only})
			}
		}
	}
	for i, t := range items(sel, "targetList") {
		if _, rt := kindOf(t); rt != nil && i < len(cols) {
			st.facts = append(st.facts, fact{a: side{ref: target, col: cols[i]}, b: st.sideOf(source, rt["val"]), home: l, only: only})
		}
	}
	return l
}

func (st *statement) addWith(l *level, n jsonNode) {
	_, with := kindOf(n["withClause"])
	if with == nil {
		with, _ = n["withClause"].(jsonNode)
	}
	for _, c := range items(with, "ctes") {
		_, cte := kindOf(c)
		body := st.build(cte["ctequery"], l)
		l.ctes[str(cte, "ctename")] = &ref{alias: str(cte, "ctename"), body: body, cols: body[0].outputs}
	}
}

// addFrom adds one FROM item's references and the conditions of its joins; it returns the references.
func (st *statement) addFrom(l *level, item any) []*ref {
	kind, n := kindOf(item)
	switch kind {
	case "RangeVar":
		return []*ref{st.addRangeVar(l, n)}
	case "JoinExpr":
		left, right := st.addFrom(l, n["larg"]), st.addFrom(l, n["rarg"])
		var only map[*ref]bool
		switch str(n, "jointype") {
		case "JOIN_LEFT":
			only = setOf(right)
		case "JOIN_RIGHT":
			only = setOf(left)
		case "JOIN_FULL":
			only = map[*ref]bool{}
		}
		st.addSubLinks(l, n, "larg", "rarg")
		st.addQuals(l, n["quals"], only)
		for _, col := range names(items(n, "usingClause")) {
			a, b := firstWith(left, col), firstWith(right, col)
			st.facts = append(st.facts, fact{a: side{ref: a, col: col}, b: side{ref: b, col: col}, home: l, only: only})
		}
		return append(left, right...)
	case "RangeSubselect":
		body := st.build(n["subquery"], l)
		r := &ref{alias: aliasOf(n, ""), body: body, cols: body[0].outputs}
		l.refs = append(l.refs, r)
		return []*ref{r}
	case "RangeFunction":
		st.addSubLinks(l, n, "alias")
		r := &ref{alias: aliasOf(n, "")}
		if a, ok := n["alias"].(jsonNode); ok && len(items(a, "colnames")) > 0 {
			r.cols = setOfNames(names(items(a, "colnames")))
		}
		l.refs = append(l.refs, r)
		return []*ref{r}
	}
	st.err = fmt.Errorf("a FROM item of kind %q: teach the tenant-scope test about it", kind)
	return nil
}

// addRangeVar adds a named table (or CTE) to the level.
func (st *statement) addRangeVar(l *level, rv jsonNode) *ref {
	name, schemaName := str(rv, "relname"), str(rv, "schemaname")
	r := &ref{alias: aliasOf(rv, name)}
	if cte := findCTE(l, name); cte != nil && schemaName == "" {
		r.body, r.cols = cte.body, cte.cols
	} else if t := st.schema.table(name); t != nil && (schemaName == "" || schemaName == "public") {
		r.table, r.cols = t, t.cols
	}
	l.refs = append(l.refs, r)
	return r
}

func aliasOf(n jsonNode, fallback string) string {
	if a, ok := n["alias"].(jsonNode); ok {
		return str(a, "aliasname")
	}
	return fallback
}

func findCTE(l *level, name string) *ref {
	for ; l != nil; l = l.parent {
		if c, ok := l.ctes[name]; ok {
			return c
		}
	}
	return nil
}

func firstWith(refs []*ref, col string) *ref {
	for _, r := range refs {
		if r.cols[col] {
			return r
		}
	}
	return nil
}

func setOf(refs []*ref) map[*ref]bool {
	m := map[*ref]bool{}
	for _, r := range refs {
		m[r] = true
	}
	return m
}

func setOfNames(list []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range list {
		m[s] = true
	}
	return m
}

// outputsOf names a level's result columns from its target list; nil when one cannot be named.
func outputsOf(l *level, targets []any) map[string]bool {
	out := map[string]bool{}
	for _, t := range targets {
		_, rt := kindOf(t)
		if name := str(rt, "name"); name != "" {
			out[name] = true
			continue
		}
		kind, n := kindOf(rt["val"])
		if kind != "ColumnRef" {
			continue // PostgreSQL names it after the function ("count", "coalesce"): never a key here
		}
		fields := names(items(n, "fields"))
		last := fields[len(fields)-1]
		if last != "*" {
			out[last] = true
			continue
		}
		for _, r := range l.refs {
			if len(fields) == 2 && r.alias != fields[0] {
				continue
			}
			if r.cols == nil {
				return nil
			}
			for c := range r.cols {
				out[c] = true
			}
		}
	}
	return out
}

// addSubLinks builds the levels of every sub-select in n's fields (but those in skip) and keeps them by
// position, for addQuals and sideOf.
func (st *statement) addSubLinks(l *level, n jsonNode, skip ...string) {
	for key, v := range n {
		if contains(skip, key) {
			continue
		}
		walk(v, func(kind string, f jsonNode) bool {
			if kind != "SubLink" {
				return true
			}
			st.subLinks[num(f, "location")] = st.build(f["subselect"], l)
			st.addSubLinks(l, f, "subselect")
			return false
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func num(n jsonNode, key string) float64 { f, _ := n[key].(float64); return f }

// walk calls fn on every wrapped node under v, depth first; fn returning false skips the node's insides.
func walk(v any, fn func(kind string, fields jsonNode) bool) {
	switch x := v.(type) {
	case []any:
		for _, it := range x {
			walk(it, fn)
		}
	case jsonNode:
		if k, f := kindOf(x); k != "" {
			if fn(k, f) {
				for _, fv := range f {
					walk(fv, fn)
				}
			}
			return
		}
		for _, fv := range x {
			walk(fv, fn)
		}
	}
}

// addQuals records the equalities among a condition's conjuncts (what is behind an OR or a NOT restricts
// nothing for sure, so it counts for nothing).
func (st *statement) addQuals(l *level, expr any, only map[*ref]bool) {
	add := func(a, b side) { st.facts = append(st.facts, fact{a: a, b: b, home: l, only: only}) }
	for _, c := range conjuncts(expr) {
		kind, n := kindOf(c)
		switch {
		case kind == "A_Expr" && len(names(items(n, "name"))) == 1 && names(items(n, "name"))[0] == "=":
			st.addEquality(l, n, add)
		case kind == "SubLink" && str(n, "subLinkType") == "ANY_SUBLINK":
			// x IN (SELECT …): x equals a column of the sub-select, pinned when the sub-select is.
			sub := side{ref: &ref{body: st.subLinks[num(n, "location")]}, col: "*"}
			_, row := kindOf(n["testexpr"])
			if k, _ := kindOf(n["testexpr"]); k == "RowExpr" {
				for _, arg := range items(row, "args") {
					add(st.sideOf(l, arg), sub)
				}
			} else {
				add(st.sideOf(l, n["testexpr"]), sub)
			}
		}
	}
}

// addEquality reads a = b, (a1, a2) = (b1, b2), a = ANY(array) and a IN (list).
func (st *statement) addEquality(l *level, n jsonNode, add func(a, b side)) {
	left := stripCasts(n["lexpr"])
	switch str(n, "kind") {
	case "AEXPR_OP":
		lk, lrow := kindOf(left)
		rk, rrow := kindOf(stripCasts(n["rexpr"]))
		if lk == "RowExpr" && rk == "RowExpr" {
			la, ra := items(lrow, "args"), items(rrow, "args")
			for i := 0; i < len(la) && i < len(ra); i++ {
				add(st.sideOf(l, la[i]), st.sideOf(l, ra[i]))
			}
			return
		}
		add(st.sideOf(l, left), st.sideOf(l, n["rexpr"]))
	case "AEXPR_OP_ANY":
		add(st.sideOf(l, left), st.sideOf(l, n["rexpr"]))
	case "AEXPR_IN":
		_, list := kindOf(n["rexpr"])
		for _, it := range items(list, "items") {
			if !st.sideOf(l, it).value {
				return
			}
		}
		add(st.sideOf(l, left), side{value: true})
	}
}

// conjuncts splits a condition at its top-level ANDs.
func conjuncts(expr any) []any {
	kind, n := kindOf(expr)
	if kind == "" {
		return nil
	}
	if kind == "BoolExpr" && str(n, "boolop") == "AND_EXPR" {
		var out []any
		for _, arg := range items(n, "args") {
			out = append(out, conjuncts(arg)...)
		}
		return out
	}
	return []any{expr}
}

func stripCasts(expr any) any {
	for {
		kind, n := kindOf(expr)
		if kind != "TypeCast" && kind != "CollateClause" {
			return expr
		}
		expr = n["arg"]
	}
}

// sideOf reads one side of an equality.
func (st *statement) sideOf(l *level, expr any) side {
	expr = stripCasts(expr)
	kind, n := kindOf(expr)
	switch {
	case kind == "ColumnRef":
		if r, col := resolve(l, names(items(n, "fields"))); r != nil {
			return side{ref: r, col: col}
		}
		return side{}
	case kind == "SubLink":
		// A scalar or ARRAY sub-select: pinned when everything it reads is.
		return side{ref: &ref{body: st.subLinks[num(n, "location")]}, col: "*"}
	case isParam(kind, n):
		return side{value: true}
	}
	return side{value: !mentionsColumn(expr)}
}

// isParam: $1, sqlc's @name (PostgreSQL parses it as the prefix operator @ on a column named name) and
// sqlc.arg(…), sqlc.narg(…), sqlc.slice(…).
func isParam(kind string, n jsonNode) bool {
	switch kind {
	case "ParamRef":
		return true
	case "A_Expr":
		op := names(items(n, "name"))
		return n["lexpr"] == nil && len(op) == 1 && op[0] == "@"
	case "FuncCall":
		fn := names(items(n, "funcname"))
		return len(fn) == 2 && fn[0] == "sqlc"
	}
	return false
}

// mentionsColumn says whether an expression reads any column (sub-selects and parameters aside).
func mentionsColumn(expr any) bool {
	found := false
	walk(expr, func(kind string, n jsonNode) bool {
		if kind == "ColumnRef" {
			found = true
		}
		return !found && kind != "SubLink" && !isParam(kind, n)
	})
	return found
}

// resolve finds the reference a column belongs to: by its qualifier, or the level's one reference that
// has a column of that name, looking outwards through the enclosing levels.
func resolve(l *level, fields []string) (*ref, string) {
	if len(fields) == 0 {
		return nil, ""
	}
	col := fields[len(fields)-1]
	for ; l != nil; l = l.parent {
		if len(fields) >= 2 {
			for _, r := range l.refs {
				if r.alias == fields[len(fields)-2] {
					return r, col
				}
			}
			continue
		}
		var unknown *ref
		for _, r := range l.refs {
			if r.cols[col] {
				return r, col
			}
			if r.cols == nil && unknown == nil {
				unknown = r
			}
		}
		if unknown != nil {
			return unknown, col
		}
	}
	return nil, ""
}

// settle applies the facts until nothing changes: a reference pinned by one fact may pin others.
func (st *statement) settle() {
	for changed := true; changed; {
		changed = false
		for _, f := range st.facts {
			changed = st.apply(f, f.a, f.b) || changed
			changed = st.apply(f, f.b, f.a) || changed
		}
	}
}

// apply pins dst from src when the fact allows it; it says whether anything changed.
func (st *statement) apply(f fact, src, dst side) bool {
	r := dst.ref
	if r == nil || r.table == nil || !hasRef(f.home.refs, r) || (f.only != nil && !f.only[r]) {
		return false
	}
	changed := false
	if !r.strict && dst.col != "" && dst.col == r.table.tenantCol && pinsTenant(src, true) {
		r.strict, changed = true, true
	}
	if !r.byKey && (r.strict || (dst.col != "" && dst.col == r.table.tenantCol && pinsTenant(src, false)) ||
		tiesByKey(src, dst)) {
		r.byKey, changed = true, true
	}
	return changed
}

func hasRef(refs []*ref, r *ref) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// pinsTenant says whether src is a tenant: a value, a pinned reference's tenant column, or any column of a
// sub-select or CTE that reads only pinned references (or none: unnest(@tenant_ids)).
func pinsTenant(src side, strict bool) bool {
	switch {
	case src.value:
		return true
	case src.ref == nil:
		return false
	case src.ref.table != nil:
		pinned := src.ref.byKey
		if strict {
			pinned = src.ref.strict
		}
		return src.col == src.ref.table.tenantCol && pinned
	}
	pure, s, b := derivedStatus(src.ref, map[*ref]bool{})
	return pure || (strict && s) || (!strict && b)
}

// tiesByKey: dst is a key column (id, or one of ownerKeys) equal to the matching key of a reference whose
// tenant is known (subscription_id = s.id, d.subscription_id = f.subscription_id), or to a column of a
// sub-select or CTE that reads only such references. A key equal to a parameter names no tenant.
func tiesByKey(src, dst side) bool {
	if src.ref == nil || (dst.col != "id" && ownerKeys[dst.col] == "") {
		return false
	}
	if src.ref.table == nil {
		pure, _, b := derivedStatus(src.ref, map[*ref]bool{})
		return !pure && b
	}
	if !src.ref.byKey {
		return false
	}
	a, b := src.ref.table.name, dst.ref.table.name
	return (src.col == dst.col && ownerKeys[src.col] != "") ||
		(src.col == "id" && ownerKeys[dst.col] == a) || (dst.col == "id" && ownerKeys[src.col] == b)
}

// derivedStatus looks at everything a CTE or sub-select reads, nested ones included: pure when it reads
// no table with a tenant (parameters, unnest, pg_catalog), else whether all of those are strict and
// byKey.
func derivedStatus(r *ref, seen map[*ref]bool) (pure, strict, byKey bool) {
	pure, strict, byKey = true, true, true
	if seen[r] {
		return
	}
	seen[r] = true
	var visit func(l *level)
	visit = func(l *level) {
		for _, x := range l.refs {
			switch {
			case x.table != nil && (x.table.tenantCol != "" || x.table.distributed):
				pure, strict, byKey = false, strict && x.strict, byKey && x.byKey
			case x.table == nil:
				if p, s, b := derivedStatus(x, seen); !p {
					pure, strict, byKey = false, strict && s, byKey && b
				}
			}
		}
		for _, c := range l.children {
			visit(c)
		}
	}
	for _, l := range r.body {
		visit(l)
	}
	return
}

// unpinned names the statement's references to distributed tables that are not strict (or, with byKey,
// not even tied by a key), sorted.
func (st *statement) unpinned(byKey bool) []string {
	seen := map[string]bool{}
	for _, l := range st.levels {
		for _, r := range l.refs {
			if r.table != nil && r.table.distributed && !(r.strict || (byKey && r.byKey)) {
				seen[r.name()] = true
			}
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// describe is a statement's verdict in words, for failure messages.
func (st *statement) describe() string {
	strict, byKey := st.unpinned(false), st.unpinned(true)
	switch {
	case len(strict) == 0:
		return "names the tenant on every distributed table"
	case len(byKey) == 0:
		return "joins by key only: " + strings.Join(strict, ", ")
	}
	return "no tenant on: " + strings.Join(byKey, ", ")
}
