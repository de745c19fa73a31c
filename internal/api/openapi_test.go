package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"gopkg.in/yaml.v3"

	"github.com/hookline/hookline/internal/api"
)

const specPath = "../../api/openapi.yaml"

// openAPI is the part of an OpenAPI 3.1 document the tests read.
type openAPI struct {
	OpenAPI string `yaml:"openapi"`
	Info    struct {
		Title   string `yaml:"title"`
		Version string `yaml:"version"`
	} `yaml:"info"`
	Paths      map[string]map[string]yaml.Node `yaml:"paths"`
	Components struct {
		SecuritySchemes map[string]any `yaml:"securitySchemes"`
		Schemas         map[string]any `yaml:"schemas"`
		Responses       map[string]any `yaml:"responses"`
		Parameters      map[string]any `yaml:"parameters"`
		Headers         map[string]any `yaml:"headers"`
	} `yaml:"components"`
}

// operation is one documented operation.
type operation struct {
	OperationID string `yaml:"operationId"`
	Security    []map[string][]string
	Scope       string `yaml:"x-required-scope"`
	Responses   map[string]struct {
		Ref     string         `yaml:"$ref"`
		Headers map[string]any `yaml:"headers"`
	} `yaml:"responses"`
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func loadSpec(t *testing.T) openAPI {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(specPath))
	if err != nil {
		t.Fatalf("read %s: %v", specPath, err)
	}
	var doc openAPI
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse %s: %v", specPath, err)
	}
	return doc
}

// operations returns the documented operations as "METHOD /path" (parameters normalised to {}).
func (d openAPI) operations(t *testing.T) map[string]operation {
	t.Helper()
	out := map[string]operation{}
	for path, item := range d.Paths {
		for key, node := range item {
			if !slices.Contains(httpMethods, key) {
				continue
			}
			var op operation
			if err := node.Decode(&op); err != nil {
				t.Fatalf("%s %s: %v", key, path, err)
			}
			out[strings.ToUpper(key)+" "+normalise(path)] = op
		}
	}
	return out
}

var paramRE = regexp.MustCompile(`\{[^}]*\}`)

// normalise turns chi's and OpenAPI's path parameters ({tenantID}, {tenant_id}, {id:[0-9]+}) into {} and
// drops a trailing slash (chi registers a subrouter's "/" as ".../").
func normalise(p string) string {
	p = paramRE.ReplaceAllString(p, "{}")
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// registeredRoutes walks the API router as api.go builds it.
func registeredRoutes(t *testing.T) map[string]bool {
	t.Helper()
	r, ok := (&api.API{}).Routes().(chi.Routes)
	if !ok {
		t.Fatal("API.Routes() is not a chi router")
	}
	out := map[string]bool{}
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out[method+" /api/v1"+normalise(route)] = true
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	if len(out) == 0 {
		t.Fatal("the router has no routes")
	}
	return out
}

// TestOpenAPIDocumentsEveryRoute fails when a route registered in api.go is missing from api/openapi.yaml
// or the document describes an /api/v1 route that is not registered.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	ops := doc.operations(t)
	routes := registeredRoutes(t)
	for rt := range routes {
		if _, ok := ops[rt]; !ok {
			t.Errorf("route %s is registered in internal/api/api.go but not documented in api/openapi.yaml", rt)
		}
	}
	for op := range ops {
		path := strings.SplitN(op, " ", 2)[1]
		if strings.HasPrefix(path, "/api/v1/") && !routes[op] {
			t.Errorf("api/openapi.yaml documents %s, which internal/api/api.go does not register", op)
		}
	}
	for _, p := range []string{"GET /healthz", "GET /readyz", "GET /metrics"} {
		if _, ok := ops[p]; !ok {
			t.Errorf("api/openapi.yaml does not document %s", p)
		}
	}
}

// TestOpenAPIStructure checks the document is an OpenAPI 3.1 document at least structurally, and that each
// API operation has an id, a bearer requirement naming its scope, the errors every call can return and
// X-Correlation-ID on each response.
func TestOpenAPIStructure(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	if !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(doc.OpenAPI) {
		t.Errorf("openapi is %q, want 3.1.x", doc.OpenAPI)
	}
	if doc.Info.Title == "" || doc.Info.Version == "" {
		t.Error("info needs title and version")
	}
	if len(doc.Paths) == 0 {
		t.Fatal("no paths")
	}
	c := doc.Components
	if c.SecuritySchemes["bearerAuth"] == nil || c.Schemas["Error"] == nil {
		t.Error("components need securitySchemes.bearerAuth and schemas.Error")
	}

	checkRefsResolve(t)

	// Every error code of the contract is in the Error schema.
	errSchema, _ := yaml.Marshal(c.Schemas["Error"])
	for code := range codeStatus {
		if !strings.Contains(string(errSchema), code) {
			t.Errorf("Error schema lacks code %s", code)
		}
	}

	ids := map[string]bool{}
	for name, op := range doc.operations(t) {
		if op.OperationID == "" || ids[op.OperationID] {
			t.Errorf("%s: missing or duplicate operationId %q", name, op.OperationID)
		}
		ids[op.OperationID] = true
		checkOperation(t, name, op)
	}
	for _, code := range []string{"RateLimited"} {
		resp, _ := yaml.Marshal(c.Responses[code])
		if !strings.Contains(string(resp), "Retry-After") {
			t.Errorf("response %s does not document Retry-After", code)
		}
	}
}

// checkRefsResolve checks that every $ref of the document points at something that exists.
func checkRefsResolve(t *testing.T) {
	b, _ := os.ReadFile(filepath.FromSlash(specPath))
	var whole map[string]any
	if err := yaml.Unmarshal(b, &whole); err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\$ref: '#/([^']+)'`).FindAllStringSubmatch(string(b), -1) {
		var cur any = whole
		for _, part := range strings.Split(m[1], "/") {
			mm, ok := cur.(map[string]any)
			if !ok || mm[part] == nil {
				t.Errorf("$ref #/%s does not resolve", m[1])
				break
			}
			cur = mm[part]
		}
	}
}

// operationScopes are the scopes an operation's bearer requirement may name.
var operationScopes = []string{"admin", "subscriptions:read", "subscriptions:write", "events:write", "deliveries:read", "deliveries:write", "portal:write"}

// checkOperation checks one operation: X-Correlation-ID on each response and, for an API operation, a
// bearer requirement naming its scope and the errors every call can return.
func checkOperation(t *testing.T, name string, op operation) {
	for status, r := range op.Responses {
		if r.Ref == "" && r.Headers["X-Correlation-ID"] == nil {
			t.Errorf("%s %s: response does not document X-Correlation-ID", name, status)
		}
	}
	if !strings.Contains(name, " /api/v1/") {
		return
	}
	if op.Scope == "any" {
		// Any valid token (the event catalogue's reads): a bearer token with no scope named.
		ok := len(op.Security) == 1
		if ok {
			roles, has := op.Security[0]["bearerAuth"]
			ok = has && len(roles) == 0
		}
		if !ok {
			t.Errorf("%s: x-required-scope any needs security [{bearerAuth: []}], got %v", name, op.Security)
		}
	} else if len(op.Security) != 1 || len(op.Security[0]["bearerAuth"]) != 1 ||
		!slices.Contains(operationScopes, op.Security[0]["bearerAuth"][0]) || op.Security[0]["bearerAuth"][0] != op.Scope {
		t.Errorf("%s: security must be [{bearerAuth: [<scope>]}] matching x-required-scope, got %v / %q", name, op.Security, op.Scope)
	}
	for _, status := range []string{"401", "403", "500"} {
		if _, ok := op.Responses[status]; !ok {
			t.Errorf("%s: does not document %s", name, status)
		}
	}
	if strings.Contains(name, "{}") {
		if _, ok := op.Responses["404"]; !ok {
			t.Errorf("%s: has path ids but does not document 404", name)
		}
	}
}
