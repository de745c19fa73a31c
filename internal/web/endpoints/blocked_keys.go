package endpoints

import (
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// blockedKeysPerPage is how many blocked keys the endpoint page lists at a time.
const blockedKeysPerPage = 20

// blockedKeysCursor is the endpoint page's query parameter for the page of blocked keys shown (the
// service's next_cursor); the deliveries list below ignores it.
const blockedKeysCursor = "keys"

// blockedKeysPanel is the endpoint page's Blocked keys card: for an ordered subscription whose dead
// deliveries hold their key (on_dead block) the page of keys q asks for; nil for any other subscription.
// A cursor that is not one the page gave shows the first keys.
func (h *Handler) blockedKeysPanel(r *http.Request, tenantID uuid.UUID, s subscriptions.Subscription) (*templates.BlockedKeysPanel, error) {
	if !s.Ordered || s.OnDead != subscriptions.OnDeadBlock {
		return nil, nil
	}
	base := "/subscriptions/" + s.ID.String()
	q := r.URL.Query()
	cursor := q.Get(blockedKeysCursor)
	page, err := h.Dels.BlockedKeys(r.Context(), tenantID, s.ID, cursor, blockedKeysPerPage)
	if fe := fault.As(err); fe != nil && fe.Code == fault.InvalidRequest && cursor != "" {
		cursor = ""
		page, err = h.Dels.BlockedKeys(r.Context(), tenantID, s.ID, "", blockedKeysPerPage)
	}
	if err != nil {
		return nil, err
	}
	p := &templates.BlockedKeysPanel{SkipAction: base + "/skip-key"}
	for _, k := range page.Items {
		row := templates.BlockedKeyRow{
			Key: k.OrderingKey, HeadID: k.HeadDeliveryID.String(), HeadShort: core.ShortID(k.HeadDeliveryID),
			HeadHref: "/deliveries/" + k.HeadDeliveryID.String(), EventType: k.EventType, DeadAt: h.TimeView(k.DeadAt),
			Waiting: templates.Plural(k.Waiting, "delivery", "deliveries"),
		}
		if k.DeadReason != nil {
			row.DeadReason = delivery.DeadReasonText(*k.DeadReason, k.LastStatus)
		}
		p.Rows = append(p.Rows, row)
	}
	// The pager keeps the rest of the page's query (the deliveries list's filters) and leads back to the card.
	if page.NextCursor != "" {
		nq := core.CloneValues(q)
		nq.Set(blockedKeysCursor, page.NextCursor)
		p.NextHref = base + "?" + nq.Encode() + "#blocked-keys"
	}
	if cursor != "" {
		nq := core.CloneValues(q)
		nq.Del(blockedKeysCursor)
		p.FirstHref = withQuery(base, nq) + "#blocked-keys"
	}
	return p, nil
}

// withQuery is path with q, if any.
func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// orderingContract completes the page's delivery contract for an ordered subscription, whose deliveries
// of one key are in order (the general contract says deliveries are not).
func orderingContract(contract []string, s subscriptions.Subscription) []string {
	if !s.Ordered {
		return contract
	}
	line := "On this endpoint, events with the same ordering key are sent one at a time, in publish order; a dead one is skipped and the key's next goes."
	if s.OnDead == subscriptions.OnDeadBlock {
		line = "On this endpoint, events with the same ordering key are sent one at a time, in publish order; a dead one holds its key until it is resent and delivered, or skipped."
	}
	return append(contract, line)
}
