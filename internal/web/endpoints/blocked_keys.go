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
			row.DeadReason = delivery.DeadReasonText(*k.DeadReason, nil)
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

// SkipKey is POST /subscriptions/{id}/skip-key: the blocked key's dead head (delivery_id, of ordering_key)
// is discarded, which lets the key's next delivery go; then the subscription's page (303) says what was
// done. A delivery that is not this subscription's, or not of that key, is NOT_FOUND; one that is not dead
// any more (resent meanwhile) or already discarded is not skipped, and the page says why.
func (h *Handler) SkipKey(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	id, perr := uuid.Parse(r.PostFormValue("delivery_id"))
	key := r.PostFormValue("ordering_key")
	if perr != nil || key == "" {
		h.Fail(w, r, fault.Invalid("the form names no blocked key"))
		return
	}
	d, err := h.Dels.Get(r.Context(), tenantID, id)
	if err == nil && (d.SubscriptionID != s.ID || d.OrderingKey == nil || *d.OrderingKey != key) {
		err = fault.Missing("delivery")
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	back := "/subscriptions/" + s.ID.String()
	if !d.State.Dead() {
		h.SetFlash(r, "warning", "Not skipped: delivery "+core.ShortID(id)+" of key “"+key+"” is "+string(d.State)+
			" now, not dead, so it no longer blocks the key.")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	err = h.Dels.Discard(r.Context(), tenantID, id)
	switch fe := fault.As(err); {
	case err == nil:
		h.SetFlash(r, "success", "Skipped key “"+key+"”: its dead delivery "+core.ShortID(id)+
			" was discarded (kept for audit), and the deliveries waiting behind it are being sent, in order.")
	case fe != nil && fe.Code == fault.InvalidState:
		h.SetFlash(r, "warning", "Not skipped: "+fe.Message+".")
	default:
		h.Fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
