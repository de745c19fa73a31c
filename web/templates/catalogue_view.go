package templates

// CataloguePage is /event-types: the event catalogue, grouped, with Send example.
type CataloguePage struct {
	Layout
	// Query is the name search (?q=); Total the live types in the catalogue, Shown those it kept.
	Query        string
	Total, Shown int
	Groups       []CatalogueGroup
	// Targets are the tenant's subscriptions an example can be sent to; CanSend shows the Send forms (a
	// tenant with subscriptions, in a session that may change things).
	Targets []SendTarget
	CanSend bool
	// Operator shows how types are registered; HasTenant is false for an operator without a tenant.
	Operator  bool
	HasTenant bool
}

// CatalogueGroup is one group of types, as the platform grouped them.
type CatalogueGroup struct {
	Name  string
	ID    string // the heading's element id
	Types []CatalogueType
}

// CatalogueType is one event type.
type CatalogueType struct {
	ID          string // prefix of its elements' ids
	Name        string
	Description string
	Deprecated  bool
	// HasSchema is false for a type without a schema; Fields are its schema's rows, FieldsNote says why
	// there are none when it has a schema; Schema is the schema itself, indented.
	HasSchema  bool
	Fields     []CatalogueField
	FieldsNote string
	Schema     string
	// Example is the example payload, indented ("" when none: no Send example).
	Example string
	// SendAction is where Send example posts.
	SendAction string
}

// CatalogueField is one row of a type's fields table. Enum are its allowed values, Bounds the limits on
// them in words ("≥ 1", "at most 64 characters"); with neither, any value of its type is allowed.
type CatalogueField struct {
	Path, Type  string
	Required    bool
	Description string
	Enum        []string
	Bounds      []string
}

// SendTarget is a subscription in the Send example choice.
type SendTarget struct {
	ID, Label string
	// Disabled subscriptions take no deliveries: listed, saying so, but not selectable.
	Disabled bool
	// Selected is the choice the form starts with: the first that takes deliveries.
	Selected bool
}
