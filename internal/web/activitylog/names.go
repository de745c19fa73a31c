package activitylog

import (
	"context"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/web/core"
)

// objectNames are what pages call the subscriptions, API tokens and users a page of entries is about, read
// at once for the page: an entry records only its object's id.
type objectNames struct {
	subs   map[uuid.UUID]subscriptions.Named
	tokens map[uuid.UUID]tenants.NamedToken
	users  map[uuid.UUID]string
}

// objectNames reads the names of what entries are about: their subscriptions (and those recovers were of),
// tokens and users, also those deleted, revoked or removed since where the name is still known.
func (h *Handler) objectNames(ctx context.Context, tenantID uuid.UUID, entries []activity.Entry) (objectNames, error) {
	var subIDs, tokenIDs, userIDs []uuid.UUID
	for _, e := range entries {
		id, err := uuid.Parse(e.Object.ID)
		if err != nil {
			continue
		}
		switch e.Object.Type {
		case "subscription":
			subIDs = append(subIDs, id)
		case "recover":
			if sub, ok := recoveredSubscription(e); ok {
				subIDs = append(subIDs, sub)
			}
		case "token":
			tokenIDs = append(tokenIDs, id)
		case "user":
			userIDs = append(userIDs, id)
		}
	}
	var n objectNames
	var err error
	if n.subs, err = h.Subs.Names(ctx, tenantID, subIDs); err != nil {
		return n, err
	}
	if n.tokens, err = h.Tenants.TokenNames(ctx, tenantID, tokenIDs); err != nil {
		return n, err
	}
	n.users, err = h.Tenants.UserEmails(ctx, tenantID, userIDs)
	return n, err
}

// object names what an entry changed as pages do, with a link to its page where it has one: a subscription
// by its description, else its URL ("(deleted)" once gone, without a link); a recover by the subscription
// it recovered; a token by its name; a user by email; a portal link by whom it let in; a delivery by its
// short id, as its page's title does.
func (n objectNames) object(e activity.Entry) (name, href string) {
	id, err := uuid.Parse(e.Object.ID)
	if err != nil {
		return e.Object.Type + " " + e.Object.ID, ""
	}
	short := core.ShortID(id)
	switch e.Object.Type {
	case "subscription":
		return n.subscription(id)
	case "delivery":
		return "delivery " + short, "/deliveries/" + id.String()
	case "recover":
		name = "recover " + short
		if sub, ok := recoveredSubscription(e); ok {
			subName, _ := n.subscription(sub)
			name = "recover of " + subName
		}
		return name, core.RecoverHref(id)
	case "portal_link":
		if who := portalPerson(e.Details); who != "" {
			return "portal link for " + who, ""
		}
		return "portal link " + short, ""
	case "tenant":
		return "every portal session", ""
	case "token":
		t, ok := n.tokens[id]
		switch {
		case !ok:
			return "API token " + short, ""
		case t.Revoked:
			return "API token " + t.Name + " (revoked)", ""
		}
		return "API token " + t.Name, ""
	case "user":
		if email, ok := n.users[id]; ok {
			return email, ""
		}
		// Removed since: its entries of creation and removal keep the email.
		if email, _ := e.Details["email"].(string); email != "" {
			return email + " (removed)", ""
		}
		return "user " + short + " (removed)", ""
	}
	return e.Object.Type + " " + short, ""
}

// subscription names one of the tenant's subscriptions, linking its page while it exists.
func (n objectNames) subscription(id uuid.UUID) (name, href string) {
	s, ok := n.subs[id]
	switch {
	case !ok:
		return "subscription " + core.ShortID(id), ""
	case s.Deleted:
		return s.Name + " (deleted)", ""
	}
	return s.Name, "/subscriptions/" + id.String()
}

// recoveredSubscription is the subscription a recover entry is about, from its details.
func recoveredSubscription(e activity.Entry) (uuid.UUID, bool) {
	s, _ := e.Details["subscription_id"].(string)
	id, err := uuid.Parse(s)
	return id, err == nil
}
