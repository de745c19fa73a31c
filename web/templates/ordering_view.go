package templates

// What subscriptions pages show of ordered delivery: on the endpoint form its Ordering section, on the
// endpoint's page its ordering line and blocked keys, on a delivery's page its ordering key and, for one
// parked behind its key's head, what it waits for.

// On-dead choices as the form posts them (subscriptions.OnDeadSkip and OnDeadBlock).
const (
	OnDeadSkip  = "skip"
	OnDeadBlock = "block"
)

// OrderingFields are the endpoint form's Ordering section: Ordered is the "one at a time, in order" box,
// OnDead what a dead delivery does to its key (OnDeadSkip or OnDeadBlock).
type OrderingFields struct {
	Ordered bool
	OnDead  string
}

// BlockedKeysPanel is an ordered endpoint's (on_dead block) keys held by a dead delivery, a page of them
// by key. SkipAction is where a row's Skip posts; NextHref and FirstHref page through the keys ("" when
// there is no such page).
type BlockedKeysPanel struct {
	Rows       []BlockedKeyRow
	SkipAction string
	NextHref   string
	FirstHref  string
}

// BlockedKeyRow is one blocked key: the dead delivery holding it (HeadHref its page), since when it is
// dead, why (DeadReason, in words) and how many deliveries wait behind it (Waiting, "3 deliveries").
type BlockedKeyRow struct {
	Key        string
	HeadID     string
	HeadShort  string
	HeadHref   string
	EventType  string
	DeadAt     Time
	DeadReason string
	Waiting    string
}

// DeliveryOrdering is what a delivery's page says of its ordering key (Key "" when it has none). Parked
// says it waits behind its key's head, HeadHref (and HeadShort) that head's page when known; HeadBlocks
// says the head is dead and holds the key (on_dead block) until it is resent or skipped, on the endpoint's
// page (SubHref).
type DeliveryOrdering struct {
	Key        string
	Parked     bool
	HeadHref   string
	HeadShort  string
	HeadBlocks bool
	SubHref    string
	// Holds: this dead delivery holds its key (on_dead block); HoldsWaiting wait behind it.
	Holds        bool
	HoldsWaiting int64
}
