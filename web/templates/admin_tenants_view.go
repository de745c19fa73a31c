package templates

// View models of the operator's tenant administration: new tenant, a tenant's users, new token.

// FieldError is a form field's message shown beside it; empty when the field is fine.
type FieldError = string

// NewTenantPage is /admin/tenants/new: the form creating a tenant.
type NewTenantPage struct {
	Layout
	Name      string
	NameError FieldError
}

// TenantUsersPage is /admin/tenants/{id}/users: a tenant's dashboard logins, each with a new-password
// form and Remove, and the form adding one.
type TenantUsersPage struct {
	Layout
	TenantName, TenantHref string
	Users                  []UserLine
	// The add form, with what was typed (never the password) and its errors.
	AddAction         string
	Email             string
	EmailError        FieldError
	PasswordError     FieldError
	MinPasswordLength int
}

// UserLine is one login of a tenant, with its actions.
type UserLine struct {
	ID, Email      string
	Created        Time
	PasswordAction string
	RemoveAction   string
	// PasswordError is the new-password form's message, when that form was just refused.
	PasswordError FieldError
}

// ScopeChoice is one scope's checkbox.
type ScopeChoice struct {
	Value   string
	Checked bool
}

// NewTokenPage is /admin/tenants/{id}/tokens/new, and the answer of creating one: the token is shown
// once, on that answer only.
type NewTokenPage struct {
	Layout
	TenantName, TenantHref string
	Action                 string
	Name                   string
	NameError              FieldError
	Scopes                 []ScopeChoice
	ScopesError            FieldError
	Created                *CreatedToken
}

// CreatedToken is a token just created, with its value.
type CreatedToken struct {
	Name, Token, Scopes string
}
