package principal

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/fault"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCan(t *testing.T) {
	t.Parallel()
	tenant, other := uuid.New(), uuid.New()
	reader := Token(uuid.New(), "ci", &tenant, []string{ScopeDeliveriesRead})
	if err := reader.Can(tenant, ScopeDeliveriesRead); err != nil {
		t.Errorf("reader reads: %v", err)
	}
	if err := reader.Can(tenant, ScopeDeliveriesWrite); !fault.Is(err, fault.Forbidden) || fault.As(err).Message != "this token lacks the deliveries:write scope" {
		t.Errorf("reader writes: %v", err)
	}
	if err := reader.Can(other, ""); !fault.Is(err, fault.NotFound) {
		t.Errorf("another tenant: %v", err)
	}
	if err := (Principal{}).Can(uuid.Nil, ""); !fault.Is(err, fault.NotFound) {
		t.Errorf("nobody: %v", err)
	}
	for _, admin := range []Principal{AdminToken(), Token(uuid.New(), "ops", nil, nil), User(uuid.New(), nil, "op@example.com", true), Operator(activity.Actor{Kind: activity.ActorAdmin, Name: "demo"})} {
		if err := admin.Can(other, ScopePortalWrite); err != nil || !admin.CanChange() {
			t.Errorf("%s: %v", admin.Kind, err)
		}
	}
	user := User(uuid.New(), &tenant, "dana@example.com", false)
	if err := user.Can(tenant, ScopePortalWrite); err != nil || !user.CanChange() {
		t.Errorf("user: %v", err)
	}
	view := Portal(PortalSession{ID: uuid.New(), TenantID: tenant, Scopes: []string{ScopeDeliveriesRead}, ViewOnly: true})
	if err := view.Can(tenant, ScopeDeliveriesWrite); !fault.Is(err, fault.Forbidden) || view.CanChange() {
		t.Errorf("view portal: %v", err)
	}
	if reader.CanChange() || (Principal{}).CanChange() {
		t.Error("a read-only token or nobody may change things")
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	tenant, tok, sid := uuid.New(), uuid.New(), uuid.New()
	for _, c := range []struct {
		p            Principal
		audit, label string
		who          activity.Actor
	}{
		{AdminToken(), "admin-token", "admin token", activity.Actor{Kind: activity.ActorAdmin}},
		{Token(tok, "ci", &tenant, nil), "token:ci", "token ci", activity.Actor{Kind: activity.ActorToken, ID: tok.String(), Name: "ci"}},
		{User(tok, &tenant, "dana@example.com", false), "dana@example.com", "dana@example.com", activity.Actor{Kind: activity.ActorUser, ID: tok.String(), Email: "dana@example.com"}},
		{User(tok, nil, "op@example.com", true), "op@example.com", "op@example.com", activity.Actor{Kind: activity.ActorAdmin, ID: tok.String(), Email: "op@example.com"}},
		{Principal{Admin: true}, "admin token", "", activity.Actor{}},
		{Principal{}, "tenant token", "", activity.Actor{}},
	} {
		if c.p.AuditName() != c.audit || c.p.Label() != c.label || c.p.Actor() != c.who {
			t.Errorf("%s: audit %q label %q actor %+v", c.p.Kind, c.p.AuditName(), c.p.Label(), c.p.Actor())
		}
	}
	by := activity.Actor{Kind: activity.ActorToken, ID: tok.String(), Name: "ci"}
	named := Portal(PortalSession{ID: sid, TenantID: tenant, UserID: "u17", UserEmail: "d@example.com", UserName: "Dana", MadeBy: by})
	if named.AuditName() != "portal:u17" || named.Label() != "Dana" || named.Actor().ID != "u17" || *named.Actor().Via != by {
		t.Errorf("named portal user: %q %q %+v", named.AuditName(), named.Label(), named.Actor())
	}
	anon := Portal(PortalSession{ID: sid, TenantID: tenant, MadeBy: by})
	if anon.AuditName() != "portal:"+sid.String() || anon.Label() != "portal user" || anon.Actor().ID != sid.String() {
		t.Errorf("anonymous portal user: %q %q %+v", anon.AuditName(), anon.Label(), anon.Actor())
	}
	if id, ok := named.Tenant(); !ok || id != tenant {
		t.Errorf("tenant %v %v", id, ok)
	}
	if _, ok := AdminToken().Tenant(); ok {
		t.Error("the admin token has a tenant")
	}
	if id, ok := Token(tok, "ci", &tenant, nil).Token(); !ok || id != tok {
		t.Errorf("token %v %v", id, ok)
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	p := Token(uuid.New(), "ci", nil, nil)
	ctx := NewContext(context.Background(), p)
	got, ok := FromContext(ctx)
	who, _ := activity.ActorOf(ctx)
	if !ok || got.ID != p.ID || who != p.Actor() {
		t.Errorf("context: %+v %v %+v", got, ok, who)
	}
	if _, ok := FromContext(context.Background()); ok {
		t.Error("a principal from nowhere")
	}
}

// TestCanTable is the access table of a token (moved from tenants with the type).
func TestCanTable(t *testing.T) {
	t.Parallel()
	mine, other := uuid.New(), uuid.New()
	admin := AdminToken()
	tok := Token(uuid.New(), "t", &mine, []string{ScopeDeliveriesRead, ScopeEventsWrite})
	cases := []struct {
		p      Principal
		tenant uuid.UUID
		scope  string
		want   fault.Code // "" = allowed
	}{
		{admin, mine, "", ""}, {admin, other, ScopeDeliveriesWrite, ""}, {admin, uuid.Nil, ScopeSubscriptionsWrite, ""},
		{tok, mine, "", ""}, {tok, mine, ScopeDeliveriesRead, ""}, {tok, mine, ScopeEventsWrite, ""},
		{tok, mine, ScopeDeliveriesWrite, fault.Forbidden}, {tok, mine, ScopeSubscriptionsRead, fault.Forbidden},
		{tok, other, "", fault.NotFound}, {tok, other, ScopeDeliveriesRead, fault.NotFound},
		{tok, uuid.Nil, "", fault.NotFound},
		{Principal{}, mine, "", fault.NotFound}, // the zero principal reaches nothing
		{Token(uuid.New(), "none", &mine, nil), mine, ScopeEventsWrite, fault.Forbidden},
	}
	for i, c := range cases {
		err := c.p.Can(c.tenant, c.scope)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d: Can(%v, %q) = %v, want allowed", i, c.tenant, c.scope, err)
		case c.want != "" && !fault.Is(err, c.want):
			t.Errorf("%d: Can(%v, %q) = %v, want %s", i, c.tenant, c.scope, err, c.want)
		}
	}
}
