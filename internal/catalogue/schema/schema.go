// Package schema is a JSON Schema as the event catalogue takes it: compiled within the catalogue's limits
// (limits.go), payloads checked against it within a budget, with their problems as JSON pointers, and its
// fields listed for a page (fields.go). It knows nothing of storage: the catalogue keeps the schemas and
// says which one a payload is checked against.
package schema

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hookline/hookline/internal/fault"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxDetails bounds the problems one refusal lists.
const maxDetails = 10

// schemaURL names every schema while it compiles. Any absolute URL would do; this one names nothing the
// compiler could fetch, and is what its messages quote.
const schemaURL = "urn:hookline:schema"

var printer = message.NewPrinter(language.English)

// Schema is a compiled schema ready to check payloads, with what the cost of a check depends on.
type Schema struct {
	s *jsonschema.Schema
	g *graph
}

// noFetch is the compiler's loader: a schema is checked on its own, never with documents fetched from the
// network or read from the server's disk (the library's default loader reads file:// URLs).
type noFetch struct{}

func (noFetch) Load(url string) (any, error) {
	return nil, fmt.Errorf("Hookline does not fetch %s: put what it names under $defs and refer to it as #/$defs/...", url)
}

// Compile compiles a JSON Schema, draft 2020-12 unless its $schema names another. A schema that does
// not compile, or that passes one of the catalogue's limits (limits.go), is INVALID_REQUEST saying why.
func Compile(raw []byte) (*Schema, error) {
	if len(raw) > MaxBytes {
		return nil, limitError("schema is %d KiB as compact JSON (with its $refs and YAML aliases expanded, when imported); the catalogue takes schemas of at most %d KiB", (len(raw)+1023)>>10, MaxBytes>>10)
	}
	sh, err := scanJSON(raw, MaxDepth, "schema")
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fault.Invalid("schema is not valid JSON")
	}
	patterns, err := checkPatterns(doc)
	if err != nil {
		return nil, err
	}
	if w := sh.weight + patterns; w > MaxWeight {
		return nil, limitError("schema is too large to compile: it weighs %d, and the catalogue takes at most %d (each value its objects and arrays hold weighs 1 and an object 5, times 1 + (depth/32)², and each pattern 8 and its size; about 1,000 properties)", w, MaxWeight)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noFetch{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fault.Invalid("schema is not valid: %s", compilerMessage(err))
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fault.Invalid("schema is not a valid JSON Schema: %s", compilerMessage(err))
	}
	g := newGraph(s)
	if err := analyse(s, g); err != nil {
		return nil, err
	}
	return &Schema{s: s, g: g}, nil
}

// compilerMessage is the compiler's error in one line, without the placeholder URL where it adds nothing.
func compilerMessage(err error) string {
	msg := err.Error()
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) && le.Err != nil {
		msg = le.Err.Error()
	}
	msg = strings.ReplaceAll(msg, "'"+schemaURL+"#", "'#")
	msg = strings.ReplaceAll(msg, schemaURL+"#", "#")
	msg = strings.ReplaceAll(msg, schemaURL, "the schema")
	return strings.Join(strings.Fields(msg), " ")
}

// Check validates a JSON payload against the schema and returns its problems (none: it satisfies it),
// each with a JSON pointer into the payload, at most maxDetails. what names the payload in refusals
// ("payload", "example"). A payload past the limits of a check (nesting, numbers, MaxCheckSteps) is err,
// INVALID_REQUEST saying which, without being checked.
func (c *Schema) Check(payload []byte, what string) (details []fault.Detail, err error) {
	sh, err := scanJSON(payload, MaxPayloadDepth, what)
	if err != nil {
		return nil, err
	}
	tooCostly := func() error {
		return limitError("%s would take more than %d steps to check against this schema (a step for each subschema that applies to each of its values, more for long strings, long enums, large objects and arrays and deep values), the most one check may take", what, MaxCheckSteps)
	}
	m := &meter{g: c.g, left: MaxCheckSteps - sh.tokens/2}
	if m.left < 0 {
		return nil, tooCostly()
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return []fault.Detail{{Path: "", Message: "not valid JSON"}}, nil
	}
	if !m.value(c.s, v, 0) {
		return nil, tooCostly()
	}
	err = c.s.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []fault.Detail{bounded(nil, err.Error())}, nil
	}
	var out []fault.Detail
	leaves(ve, &out)
	if len(out) == 0 {
		out = append(out, bounded(ve.InstanceLocation, problem(ve.ErrorKind)))
	}
	// The validator visits an object's properties in map order: sorted, the same payload always gets the
	// same answer.
	slices.SortStableFunc(out, func(a, b fault.Detail) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
	})
	return out[:min(len(out), maxDetails)], nil
}

// maxCollected bounds the problems gathered before sorting and keeping maxDetails.
const maxCollected = 100

// leaves collects the innermost errors (the ones that say what is wrong, not that a subschema failed).
// A property that additionalProperties refuses is a problem at that property, not at its object.
func leaves(e *jsonschema.ValidationError, out *[]fault.Detail) {
	if len(*out) >= maxCollected {
		return
	}
	if len(e.Causes) == 0 {
		if ap, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
			for _, name := range ap.Properties {
				if len(*out) < maxCollected {
					*out = append(*out, bounded(append(slices.Clip(e.InstanceLocation), name), "not allowed: the schema allows no properties other than those it names"))
				}
			}
			return
		}
		*out = append(*out, bounded(e.InstanceLocation, problem(e.ErrorKind)))
		return
	}
	for _, c := range e.Causes {
		leaves(c, out)
	}
}

// problem is what an error says, in the validator's words, except where those would quote a payload's
// string or a schema's long list whole: a detail is cut to maxDetailMessage anyway, and writing out a
// thousand allowed values to keep fifty of them costs megabytes.
func problem(k jsonschema.ErrorKind) string {
	short := func(s string) string { return "'" + truncateText(s, 60) + "'" }
	switch k := k.(type) {
	case *kind.Pattern:
		return fmt.Sprintf("%s does not match pattern %s", short(k.Got), short(k.Want))
	case *kind.PropertyNames:
		return fmt.Sprintf("invalid property name %s", short(k.Property))
	case *kind.Format:
		got, _ := k.Got.(string)
		return fmt.Sprintf("%s is not valid %s", short(got), k.Want)
	case *kind.Enum:
		if len(k.Want) > 10 {
			return fmt.Sprintf("value must be one of the %d values the schema lists", len(k.Want))
		}
	case *kind.Const:
		if c, ok := k.Want.(string); ok && len(c) > 60 {
			return fmt.Sprintf("value must be %s", short(c))
		}
	}
	return k.LocalizedString(printer)
}

// Bounds of one detail: an answer refusing a payload stays a few KiB whatever the payload holds.
const (
	maxDetailPath    = 512
	maxDetailMessage = 300
)

// bounded is a detail whose path and message fit the bounds: a path too long names the deepest
// ancestor that fits (the message says the problem is below it), a message too long is cut.
func bounded(tokens []string, message string) fault.Detail {
	path := pointer(tokens)
	if len(path) > maxDetailPath {
		for len(path) > maxDetailPath {
			path = path[:strings.LastIndexByte(path, '/')]
		}
		message = "below this point (its path is too long to show): " + message
	}
	if len(message) > maxDetailMessage {
		cut := maxDetailMessage
		for cut > 0 && !utf8.RuneStart(message[cut]) {
			cut--
		}
		message = message[:cut] + "…"
	}
	return fault.Detail{Path: path, Message: message}
}

// pointer is a JSON pointer (RFC 6901) of the tokens: "" for the whole payload.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// InvalidPayload is INVALID_REQUEST listing where the payload fails its schema.
func InvalidPayload(what string, details []fault.Detail) error {
	first := details[0]
	where := first.Path
	if where == "" {
		where = "(the whole payload)"
	}
	msg := fmt.Sprintf("%s: at %s: %s", what, where, first.Message)
	if len(details) > 1 {
		msg += fmt.Sprintf(" (and %d more in details)", len(details)-1)
	}
	e := fault.Invalid("%s", msg)
	e.Details = details
	return e
}
