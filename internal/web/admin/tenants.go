package admin

import (
	"context"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// The operator's tenant administration: create a tenant; list, add, re-password and remove a tenant's
// dashboard users; create an API token (shown once). Each form calls the same tenants.Service function as
// the API, so the rules are one; a refusal is shown beside its field with the domain's own message.

// fieldOf tells which field a domain refusal is about: the domain's messages start with the field's name
// ("email is not a valid address", "password must be…"); anything else is about the first field.
func fieldOf(err error, fields ...string) (string, string, bool) {
	fe := fault.As(err)
	if fe == nil || (fe.Code != fault.InvalidRequest && fe.Code != fault.InvalidState) {
		return "", "", false
	}
	msg := strings.ToUpper(fe.Message[:1]) + fe.Message[1:] + "."
	for _, f := range fields {
		if strings.HasPrefix(fe.Message, f+" ") {
			return f, msg, true
		}
	}
	return fields[0], msg, true
}

// adminTenantPath is the {id} tenant, existing (the routes are an operator's: requireAdmin).
func (h *Handler) adminTenantPath(w http.ResponseWriter, r *http.Request) (tenants.Tenant, bool) {
	id, err := core.PathID(r)
	if err == nil {
		var t tenants.Tenant
		if t, err = h.Tenants.GetTenant(r.Context(), id); err == nil {
			return t, true
		}
	}
	h.Fail(w, r, err)
	return tenants.Tenant{}, false
}

func tenantHref(t tenants.Tenant) string { return "/admin/tenants/" + t.ID.String() }

func (h *Handler) tenantCrumb(t tenants.Tenant) templates.Crumb {
	return templates.Crumb{Label: t.Name, Href: tenantHref(t)}
}

// tenantNames maps every tenant's id to its name, for filters and for criteria in words.
func (h *Handler) tenantNames(ctx context.Context) (map[uuid.UUID]string, []templates.Option, error) {
	ts, err := h.Tenants.ListTenants(ctx)
	if err != nil {
		return nil, nil, err
	}
	names := make(map[uuid.UUID]string, len(ts))
	opts := make([]templates.Option, 0, len(ts))
	for _, t := range ts {
		names[t.ID] = t.Name
		opts = append(opts, templates.Option{Value: t.ID.String(), Label: t.Name})
	}
	return names, opts, nil
}

// pathUser reads the {user} path value; a malformed id is as missing as another tenant's user.
func pathUser(r *http.Request) (uuid.UUID, error) {
	return params.PathID(r.PathValue("user"), "user")
}
