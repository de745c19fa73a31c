package catalogue

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookline/hookline/internal/fault"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxDetails bounds the problems one refusal lists.
const maxDetails = 10

// schemaURL names every schema while it compiles. Any absolute URL would do; this one names nothing the
// compiler could fetch, and is what its messages quote.
const schemaURL = "urn:hookline:schema"

var printer = message.NewPrinter(language.English)

// compiledSchema is a schema ready to check payloads.
type compiledSchema struct{ s *jsonschema.Schema }

// noFetch is the compiler's loader: a schema is checked on its own, never with documents fetched from the
// network or read from the server's disk (the library's default loader reads file:// URLs).
type noFetch struct{}

func (noFetch) Load(url string) (any, error) {
	return nil, fmt.Errorf("Hookline does not fetch %s: put what it names under $defs and refer to it as #/$defs/...", url)
}

// compileSchema compiles a JSON Schema, draft 2020-12 unless its $schema names another. A schema that does
// not compile is INVALID_REQUEST with the compiler's message.
func compileSchema(raw []byte) (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fault.Invalid("schema is not valid JSON")
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
	return &compiledSchema{s: s}, nil
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

// check validates a JSON payload against the schema and returns its problems (none: it satisfies it),
// each with a JSON pointer into the payload, at most maxDetails.
func (c *compiledSchema) check(payload []byte) []fault.Detail {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return []fault.Detail{{Path: "", Message: "not valid JSON"}}
	}
	err = c.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []fault.Detail{{Path: "", Message: err.Error()}}
	}
	var out []fault.Detail
	leaves(ve, &out)
	if len(out) == 0 {
		out = append(out, fault.Detail{Path: pointer(ve.InstanceLocation), Message: ve.ErrorKind.LocalizedString(printer)})
	}
	// The validator visits an object's properties in map order: sorted, the same payload always gets the
	// same answer.
	slices.SortStableFunc(out, func(a, b fault.Detail) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
	})
	return out[:min(len(out), maxDetails)]
}

// maxCollected bounds the problems gathered before sorting and keeping maxDetails.
const maxCollected = 100

// leaves collects the innermost errors (the ones that say what is wrong, not that a subschema failed).
func leaves(e *jsonschema.ValidationError, out *[]fault.Detail) {
	if len(*out) >= maxCollected {
		return
	}
	if len(e.Causes) == 0 {
		*out = append(*out, fault.Detail{Path: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer)})
		return
	}
	for _, c := range e.Causes {
		leaves(c, out)
	}
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

// invalidPayload is INVALID_REQUEST listing where the payload fails its schema.
func invalidPayload(what string, details []fault.Detail) error {
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
