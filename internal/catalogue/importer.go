package catalogue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/catalogue/schema"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"
)

// MaxImport bounds an imported OpenAPI document.
const MaxImport = 1 << 20

// maxExpanded bounds what a document's schemas and examples become once YAML aliases and $refs are
// expanded: a small document can name one definition a great many times.
const maxExpanded = 8 << 20

// ImportResult says what an import did (or, in a dry run, would do), by type name.
type ImportResult struct {
	DryRun    bool          `json:"dry_run"`
	Created   []string      `json:"created"`
	Updated   []string      `json:"updated"`
	Unchanged []string      `json:"unchanged"`
	Errors    []ImportError `json:"errors"`
}

// ImportError is a webhook of the document that could not become an event type; the others still do.
type ImportError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// imported is one webhook of the document as an event type's fields.
type imported struct {
	name string
	in   Input
}

// Import makes every entry of an OpenAPI 3.1 document's webhooks an event type, or updates the type of
// that name: the description is the operation's summary (or description), the schema its JSON request
// body's schema with $refs into the document resolved, the example the media type's example (or its first
// examples entry). A webhook that cannot become a type is listed in Errors and the others are imported;
// a document that is not OpenAPI 3.1, or whose $refs do not resolve or loop, is INVALID_REQUEST and
// changes nothing. An existing type keeps its group; an archived one is brought back. With dryRun nothing
// is changed and the answer says what would be.
func (s *Service) Import(ctx context.Context, doc []byte, dryRun bool) (ImportResult, error) {
	res := ImportResult{DryRun: dryRun, Created: []string{}, Updated: []string{}, Unchanged: []string{}, Errors: []ImportError{}}
	if len(doc) > MaxImport {
		return res, fault.New(fault.PayloadTooLarge, "the OpenAPI document is larger than %d KiB", MaxImport>>10)
	}
	entries, errs, err := parseWebhooks(doc)
	if err != nil {
		return res, err
	}
	res.Errors = append(res.Errors, errs...)
	err = s.change(ctx, func(q *db.Queries) error {
		changed := false
		for _, e := range entries {
			outcome, err := importOne(ctx, q, e, s.o.Now)
			if err != nil {
				if fe := fault.As(err); fe != nil && fe.Code == fault.InvalidRequest {
					res.Errors = append(res.Errors, ImportError{Name: e.name, Message: fe.Message})
					continue
				}
				return err
			}
			switch outcome {
			case "created":
				res.Created = append(res.Created, e.name)
			case "updated":
				res.Updated = append(res.Updated, e.name)
			default:
				res.Unchanged = append(res.Unchanged, e.name)
			}
			changed = changed || outcome != "unchanged"
		}
		if dryRun || !changed {
			return errUnchanged // nothing to keep: the version stays, no process reloads
		}
		return nil
	})
	return res, err
}

// importOne creates, updates or leaves one type and says which.
func importOne(ctx context.Context, q *db.Queries, e imported, now func() time.Time) (string, error) {
	if err := checkName(e.name); err != nil {
		return "", err
	}
	cur, err := q.GetEventType(ctx, e.name)
	if errors.Is(err, pgx.ErrNoRows) {
		f, err := merge(e.name, fields{}, e.in)
		if err != nil {
			return "", err
		}
		t := now()
		if err := spellGroup(ctx, q, e.name, &f, t); err != nil {
			return "", err
		}
		_, err = q.CreateEventType(ctx, db.CreateEventTypeParams{Name: e.name, Description: f.description, GroupName: f.group,
			Schema: f.schema, Example: f.example, Deprecated: f.deprecated, Now: t})
		return "created", err
	}
	if err != nil {
		return "", err
	}
	old := stored(cur)
	f, err := merge(e.name, old, e.in)
	if err != nil {
		return "", err
	}
	archived := cur.ArchivedAt != nil
	if !archived && f.description == old.description && f.deprecated == old.deprecated &&
		bytes.Equal(f.schema, old.schema) && bytes.Equal(f.example, old.example) {
		return "unchanged", nil
	}
	t := now()
	if err := spellGroup(ctx, q, e.name, &f, t); err != nil {
		return "", err
	}
	if _, err := q.UpdateEventType(ctx, updateParams(e.name, f, true, t)); err != nil {
		return "", err
	}
	return "updated", nil
}

// parseWebhooks reads an OpenAPI 3.1 document (JSON or YAML) into one entry per webhook; webhooks that
// cannot be read are errs. err is about the whole document.
func parseWebhooks(doc []byte) (entries []imported, errs []ImportError, err error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, nil, fault.Invalid("the document is neither JSON nor YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	top := deref(&root)
	if top == nil || top.Kind != yaml.MappingNode {
		return nil, nil, fault.Invalid("the document must be an OpenAPI 3.1 object")
	}
	version := get(top, "openapi")
	if version == nil || version.Kind != yaml.ScalarNode || !strings.HasPrefix(version.Value, "3.1") {
		v := ""
		if version != nil {
			v = version.Value
		}
		return nil, nil, fault.Invalid("the document must be OpenAPI 3.1 (openapi: 3.1.x), not %q: webhooks came with 3.1", v)
	}
	hooks := deref(get(top, "webhooks"))
	if hooks == nil || hooks.Kind != yaml.MappingNode || len(hooks.Content) == 0 {
		return nil, nil, fault.Invalid("the document has no webhooks: each entry of its webhooks becomes an event type")
	}
	x := &expander{root: top}
	for i := 0; i+1 < len(hooks.Content); i += 2 {
		name := hooks.Content[i].Value
		in, err := x.webhook(hooks.Content[i+1])
		if err != nil {
			var re *refError
			if errors.As(err, &re) {
				return nil, nil, fault.Invalid("webhook %q: %s", name, re.Error())
			}
			if fe := fault.As(err); fe != nil && fe.Code != fault.InvalidRequest {
				return nil, nil, err
			}
			errs = append(errs, ImportError{Name: name, Message: errMessage(err)})
			continue
		}
		in.Name = name
		entries = append(entries, imported{name: name, in: in})
	}
	return entries, errs, nil
}

func errMessage(err error) string {
	if fe := fault.As(err); fe != nil {
		return fe.Message
	}
	return err.Error()
}

// httpMethods are a path item's operations, in the order the one describing the webhook is looked for.
var httpMethods = []string{"post", "put", "patch", "get", "delete", "options", "head", "trace"}

// webhook turns one webhooks entry (a path item) into a type's fields.
func (x *expander) webhook(item *yaml.Node) (Input, error) {
	var in Input
	item, err := x.resolve(item, nil)
	if err != nil {
		return in, err
	}
	if item.Kind != yaml.MappingNode {
		return in, fault.Invalid("not a path item object")
	}
	op := operation(item)
	if op == nil {
		return in, fault.Invalid("no operation (post) describes the request")
	}
	in.Description, in.Deprecated = describe(item, op)
	body := get(op, "requestBody")
	if body == nil {
		// A webhook whose payload is not described is still a type of the catalogue, without a schema.
		in.Schema, in.Example = json.RawMessage("null"), json.RawMessage("null")
		return in, nil
	}
	media, err := x.jsonMedia(body)
	if err != nil {
		return in, err
	}
	in.Schema, in.Example = json.RawMessage("null"), json.RawMessage("null")
	if sch := get(media, "schema"); sch != nil {
		if in.Schema, err = x.json(sch, true, "schema", schema.MaxBytes, schema.MaxDepth); err != nil {
			return in, err
		}
	}
	if in.Example, err = x.example(media); err != nil {
		return in, err
	}
	return in, nil
}

// operation is the path item's operation that describes the webhook's request (httpMethods' order), or
// nil.
func operation(item *yaml.Node) *yaml.Node {
	for _, m := range httpMethods {
		if o := deref(get(item, m)); o != nil && o.Kind == yaml.MappingNode {
			return o
		}
	}
	return nil
}

// describe is a type's description (the operation's summary or description, else the path item's; nil
// when none says anything) and whether it is deprecated.
func describe(item, op *yaml.Node) (description *string, deprecated *bool) {
	for _, n := range []*yaml.Node{get(op, "summary"), get(op, "description"), get(item, "summary"), get(item, "description")} {
		if n = deref(n); n != nil && n.Kind == yaml.ScalarNode && strings.TrimSpace(n.Value) != "" {
			d := strings.TrimSpace(n.Value)
			description = &d
			break
		}
	}
	dep := false
	if n := deref(get(op, "deprecated")); n != nil && n.Kind == yaml.ScalarNode {
		dep, _ = strconv.ParseBool(n.Value)
	}
	return description, &dep
}

// jsonMedia is the request body's JSON media type object (application/json or any +json type), with
// the body and the media type resolved when they are references.
func (x *expander) jsonMedia(body *yaml.Node) (*yaml.Node, error) {
	body, err := x.resolve(body, nil)
	if err != nil {
		return nil, err
	}
	content := deref(get(body, "content"))
	var media *yaml.Node
	if content != nil && content.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(content.Content); i += 2 {
			mt := strings.ToLower(strings.TrimSpace(strings.Split(content.Content[i].Value, ";")[0]))
			if mt == "application/json" || strings.HasSuffix(mt, "+json") {
				media = deref(content.Content[i+1])
				break
			}
		}
	}
	if media == nil || media.Kind != yaml.MappingNode {
		return nil, fault.Invalid("the request body has no application/json content: payloads are JSON")
	}
	return x.resolve(media, nil)
}

// example is the media type's example as JSON, or the value of its first examples entry; JSON null when
// it has neither.
func (x *expander) example(media *yaml.Node) (json.RawMessage, error) {
	if ex := get(media, "example"); ex != nil {
		return x.json(ex, false, "example", MaxExampleBytes, schema.MaxPayloadDepth)
	}
	exs := deref(get(media, "examples"))
	if exs == nil || exs.Kind != yaml.MappingNode || len(exs.Content) < 2 {
		return json.RawMessage("null"), nil
	}
	first, err := x.resolve(exs.Content[1], nil)
	if err != nil {
		return nil, err
	}
	if v := get(first, "value"); v != nil {
		return x.json(v, false, "example", MaxExampleBytes, schema.MaxPayloadDepth)
	}
	return json.RawMessage("null"), nil
}

// expander writes parts of the document as JSON, resolving $refs into it and following YAML aliases,
// within maxExpanded bytes in all. One value being written stops at its own bounds (the catalogue's size
// and nesting limits for a schema or an example), so that a few bytes of aliases cost no more than that.
type expander struct {
	root    *yaml.Node
	written int
	// what is written now ("schema", "example"), with its bounds.
	what             string
	maxLen, maxDepth int
}

// refError is a $ref that does not resolve or that loops, or an expansion past maxExpanded: the document
// is wrong, not one webhook, and nothing of it is imported.
type refError struct{ msg string }

func (e *refError) Error() string { return e.msg }

// json is n as compact JSON; with refs, every {"$ref": "#/..."} object is replaced by what it points at.
// what names it in refusals; a value longer than maxLen or nested deeper than maxDepth is INVALID_REQUEST.
func (x *expander) json(n *yaml.Node, refs bool, what string, maxLen, maxDepth int) (json.RawMessage, error) {
	var b bytes.Buffer
	x.what, x.maxLen, x.maxDepth = what, maxLen, maxDepth
	if err := x.write(&b, n, refs, nil, 0); err != nil {
		return nil, err
	}
	x.written += b.Len()
	return b.Bytes(), nil
}

// literalKeywords hold data, not schemas: a "$ref" inside them is a value, not a reference.
var literalKeywords = map[string]bool{"example": true, "examples": true, "enum": true, "const": true, "default": true}

// write writes n as JSON into b: with refs, a {"$ref": "#/..."} object is what it points at. stack is the
// refs being expanded around n (a ref met again loops), depth how deep n is in the value being written.
func (x *expander) write(b *bytes.Buffer, n *yaml.Node, refs bool, stack []string, depth int) error {
	n = deref(n)
	if err := x.within(b, depth); err != nil {
		return err
	}
	if n == nil {
		b.WriteString("null")
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		if ref := refOf(n); refs && ref != "" {
			return x.writeRef(b, n, ref, stack, depth)
		}
		return x.writeMapping(b, n, refs, stack, depth)
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := x.write(b, c, refs, stack, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(b, n)
	default:
		return fault.Invalid("unsupported YAML node at line %d", n.Line)
	}
	return nil
}

// within refuses to write on past the bounds: the document's maxExpanded in all, and the value's own
// length and depth.
func (x *expander) within(b *bytes.Buffer, depth int) error {
	if x.written+b.Len() > maxExpanded {
		return &refError{msg: fmt.Sprintf("the document's schemas expand to more than %d MiB (YAML aliases or $refs naming one definition many times)", maxExpanded>>20)}
	}
	if b.Len() > x.maxLen {
		return limitError("%s expands to more than %d KiB as JSON (with its $refs and YAML aliases inlined); the catalogue takes at most %d KiB", x.what, x.maxLen>>10, x.maxLen>>10)
	}
	if depth > x.maxDepth {
		return limitError("%s is nested more than %d levels deep (objects and arrays, with its $refs and YAML aliases inlined), the most the catalogue allows", x.what, x.maxDepth)
	}
	return nil
}

// writeMapping writes a mapping that is not a reference as a JSON object.
func (x *expander) writeMapping(b *bytes.Buffer, n *yaml.Node, refs bool, stack []string, depth int) error {
	b.WriteByte('{')
	for i := 0; i+1 < len(n.Content); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k := deref(n.Content[i])
		writeString(b, k.Value)
		b.WriteByte(':')
		if err := x.write(b, n.Content[i+1], refs && !literalKeywords[k.Value], stack, depth+1); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// writeRef writes a mapping whose $ref is ref: what the ref points at.
func (x *expander) writeRef(b *bytes.Buffer, n *yaml.Node, ref string, stack []string, depth int) error {
	target, next, err := x.follow(ref, stack)
	if err != nil {
		return err
	}
	if len(n.Content) == 2 { // {"$ref": ...} alone: what it points at
		return x.write(b, target, true, next, depth)
	}
	// A $ref with sibling keywords (allowed in 3.1): the siblings apply too, so the target is
	// one more allOf.
	b.WriteByte('{')
	first := true
	var allOf *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if k == "$ref" {
			continue
		}
		if k == "allOf" {
			allOf = deref(n.Content[i+1])
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeString(b, k)
		b.WriteByte(':')
		if err := x.write(b, n.Content[i+1], !literalKeywords[k], stack, depth+1); err != nil {
			return err
		}
	}
	if !first {
		b.WriteByte(',')
	}
	b.WriteString(`"allOf":[`)
	if err := x.write(b, target, true, next, depth+2); err != nil {
		return err
	}
	if allOf != nil && allOf.Kind == yaml.SequenceNode {
		for _, c := range allOf.Content {
			b.WriteByte(',')
			if err := x.write(b, c, true, stack, depth+2); err != nil {
				return err
			}
		}
	}
	b.WriteString("]}")
	return nil
}

// follow resolves a $ref met inside stack (the refs being expanded around it).
func (x *expander) follow(ref string, stack []string) (*yaml.Node, []string, error) {
	for _, s := range stack {
		if s == ref {
			return nil, nil, &refError{msg: fmt.Sprintf("$ref %s refers back to itself (%s → %s): a recursive schema cannot be inlined; Hookline resolves every $ref into one schema",
				ref, strings.Join(stack, " → "), ref)}
		}
	}
	target, err := x.lookup(ref)
	if err != nil {
		return nil, nil, err
	}
	return target, append(stack[:len(stack):len(stack)], ref), nil
}

// resolve follows n's $ref chain, if it is a reference object (a path item, request body, media type or
// example may be one).
func (x *expander) resolve(n *yaml.Node, stack []string) (*yaml.Node, error) {
	n = deref(n)
	for n != nil && n.Kind == yaml.MappingNode {
		ref := refOf(n)
		if ref == "" {
			return n, nil
		}
		target, next, err := x.follow(ref, stack)
		if err != nil {
			return nil, err
		}
		n, stack = deref(target), next
	}
	if n == nil {
		return nil, fault.Invalid("missing object")
	}
	return n, nil
}

// lookup finds a local JSON pointer ref ("#/components/schemas/Order") in the document.
func (x *expander) lookup(ref string) (*yaml.Node, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, &refError{msg: fmt.Sprintf("$ref %s points outside the document: only refs into it (#/components/...) are resolved", ref)}
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	cur := x.root
	if frag == "" {
		return cur, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, &refError{msg: fmt.Sprintf("$ref %s is not a JSON pointer (#/components/schemas/Name)", ref)}
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		cur = deref(cur)
		var next *yaml.Node
		switch {
		case cur == nil:
		case cur.Kind == yaml.MappingNode:
			next = get(cur, tok)
		case cur.Kind == yaml.SequenceNode:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur.Content) {
				next = cur.Content[i]
			}
		}
		if next == nil {
			return nil, &refError{msg: fmt.Sprintf("$ref %s does not resolve: the document has nothing there", ref)}
		}
		cur = next
	}
	return deref(cur), nil
}

// refOf is a mapping's "$ref" when it is a string, else "".
func refOf(n *yaml.Node) string {
	if r := deref(get(n, "$ref")); r != nil && r.Kind == yaml.ScalarNode {
		return r.Value
	}
	return ""
}

// get is a mapping's value for key (nil when absent or not a mapping).
func get(n *yaml.Node, key string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if deref(n.Content[i]).Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// deref skips the document node and follows aliases.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && i < 100; i++ {
		switch {
		case n.Kind == yaml.DocumentNode && len(n.Content) > 0:
			n = n.Content[0]
		case n.Kind == yaml.AliasNode && n.Alias != nil:
			n = n.Alias
		default:
			return n
		}
	}
	return n
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// writeScalar writes a YAML scalar as its JSON value (JSON documents parse as YAML with these same tags).
func writeScalar(b *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return fault.Invalid("line %d: %s is not true or false", n.Line, n.Value)
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int", "!!float":
		if json.Valid([]byte(n.Value)) {
			b.WriteString(n.Value)
			return nil
		}
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fault.Invalid("line %d: the number %s cannot be written in JSON", n.Line, n.Value)
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		writeString(b, n.Value)
	}
	return nil
}
