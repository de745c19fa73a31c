package db_test

// exemptionKind says why a query may leave the tenant out, and so which verdict it must have.
type exemptionKind string

const (
	// engine: the worker's statements over every tenant's queue (claim, completion, rescue).
	engine exemptionKind = "engine"
	// maintenance: the maintenance leader's background work over every tenant (retention, incidents,
	// auto-disable, notifications, sealing secrets).
	maintenance exemptionKind = "maintenance"
	// operator: the operator console's views and actions across tenants.
	operator exemptionKind = "operator"
	// unnamed: a customer-facing query that does not name the tenant although it could: its caller
	// checked the tenant first, so nothing leaks today, but on Citus it could not be routed.
	unnamed exemptionKind = "unnamed"
	// byKey: names the tenant on one table and reaches the others by key (see the top of
	// tenantscope_test.go); on Citus each such join gains x.tenant_id = y.tenant_id.
	byKey exemptionKind = "byKey"
)

func (k exemptionKind) verdict() string {
	if k == byKey {
		return "by key"
	}
	return "across tenants"
}

type exemption struct {
	kind exemptionKind
	why  string
}

// tenantExemptions are the queries that do not name the tenant on every distributed table, by name. The
// Citus plan for each kind is in docs/scaling.md, "Distributing by tenant on Citus".
var tenantExemptions = map[string]exemption{
	// The worker: one statement serves every tenant's queue (on Citus: a claim per shard, see the docs).
	"ClaimDeliveries":       {engine, "the worker claims across tenants: every active subscription with a due delivery"},
	"CompleteAttempts":      {engine, "a completer batch holds whatever finished, of any tenants"},
	"ReleaseDeliveries":     {engine, "gives back a batch of claimed deliveries, of any tenants"},
	"RescueExpiredLeases":   {engine, "the rescue looks at every expired lease"},
	"VacuumQueue":           {maintenance, "the leader vacuums the queue partition, every tenant's rows"},
	"OldestHistoryDelivery": {operator, "/admin and the metrics: the oldest delivery of the whole history"},
	"StalestDelivered":      {operator, "/admin and the metrics: how far retention is behind, over every tenant"},
	"StalestDead":           {operator, "/admin and the metrics: how far retention is behind, over every tenant"},

	// The maintenance leader's sweeps over every tenant.
	"DeadLetterQueuedOfDeletedSubscriptions": {maintenance, "dead-letters the waiting deliveries of every deleted subscription"},
	"ExpireUnpulledDeliveries":               {maintenance, "expires polling subscriptions' deliveries past their deadline, of any tenant"},
	"MarkUnpulledSubscriptions":              {maintenance, "marks polling subscriptions nobody commits as failing (for incidents), of any tenant"},
	"DisableFailingSubscriptions":            {maintenance, "auto-disable looks at every failing subscription"},
	"OpenIncidents":                          {maintenance, "opens incidents for failing subscriptions of any tenant"},
	"EndIncidents":                           {maintenance, "ends open incidents of any tenant"},
	"ClaimIncidentDaySteps":                  {maintenance, "incident steps due, of any tenant"},
	"ClaimIncidentExpiringSteps":             {maintenance, "incident steps due, of any tenant"},
	"ClaimIncidentExpiredSteps":              {maintenance, "incident steps due, of any tenant"},
	"ClaimDisabledNotices":                   {maintenance, "disabled subscriptions of any tenant not yet told to the operator"},
	"ClaimCertificateExpiryNotices":          {maintenance, "client certificates of any tenant expiring within the notice window, not yet told"},
	"ExhaustedSince":                         {maintenance, "expired deliveries of every tenant, counted for the operator's notification"},
	"ClaimNotifications":                     {maintenance, "the email outbox: due messages of any tenant"},
	"SkipDueNotifications":                   {maintenance, "the email outbox without a mail server: every due message"},
	"PruneNotifications":                     {maintenance, "prunes old messages of every tenant"},
	"DeleteActivityBefore":                   {maintenance, "activity retention, every tenant's old entries"},
	"DeleteDeliveredBefore":                  {maintenance, "retention: old delivered deliveries of every tenant"},
	"DeleteDeadBefore":                       {maintenance, "retention: old dead deliveries of every tenant"},
	"LockDeadBefore":                         {maintenance, "retention with an archive: old dead deliveries of every tenant"},
	"ListAttemptsOfDeliveries":               {maintenance, "the archive's attempts of a retention batch, which spans tenants"},
	"DeleteDeliveriesByID":                   {maintenance, "deletes a retention batch, which spans tenants"},
	"DeleteEventsWithoutDeliveries":          {maintenance, "deletes the events a retention batch left without deliveries"},
	"DeleteUndeliveredEventsInRange":         {maintenance, "retention of events that matched no subscription, by id range"},
	"DeleteAttemptMinutesBefore":             {maintenance, "prunes every subscription's per-minute health counts"},
	"SecretsToSeal":                          {maintenance, "sealing secrets at rest walks every subscription's secrets"},
	"ReplaceStoredSecret":                    {maintenance, "seals one secret found by SecretsToSeal, which returns no tenant"},
	"HeadersToSeal":                          {maintenance, "sealing header values at rest walks every subscription"},
	"ReplaceStoredHeaders":                   {maintenance, "seals one subscription's headers found by HeadersToSeal, which returns no tenant"},
	"CredentialsToSeal":                      {maintenance, "sealing endpoint credentials at rest walks every subscription"},
	"ReplaceStoredCredentials":               {maintenance, "seals one subscription's credentials found by CredentialsToSeal, which returns no tenant"},
	"CountSealedUnderOtherKeys":              {maintenance, "counts, at start, values of every tenant sealed under an unknown key"},

	// The operator console (and /metrics) across tenants. The dead-letter queries also serve a customer's
	// recover with @tenant_id set; the optional filter (@tenant_id IS NULL OR …) cannot count as naming it.
	"QueueGauges":          {operator, "the /metrics gauges over every tenant's queue"},
	"TenantOverview":       {operator, "every tenant with its counts"},
	"DeliveryTenant":       {operator, "the operator opens any delivery by its id alone"},
	"EventTenant":          {operator, "the operator opens any event by its id alone"},
	"SubscriptionTenant":   {operator, "the operator opens any subscription by its id alone"},
	"ListDeadLetters":      {operator, "dead letters across tenants, one tenant optional"},
	"CountDeadLetters":     {operator, "dead letters across tenants, one tenant optional (a recover's preview)"},
	"DeadLetterBreakdown":  {operator, "dead letters across tenants, grouped by tenant"},
	"DeadLettersByHour":    {operator, "dead letters across tenants, one tenant optional"},
	"DeadLetterGroups":     {operator, "dead letters across tenants, grouped by tenant"},
	"ReplayChunk":          {operator, "a bulk replay moves dead letters across tenants (a recover names its tenant)"},
	"GetReplay":            {operator, "a replay's deliveries by replay_id: a bulk replay spans tenants"},
	"ListReplays":          {operator, "replays with their deliveries by replay_id: a bulk replay spans tenants"},
	"ListReplayDeliveries": {operator, "a replay's deliveries by replay_id: a bulk replay spans tenants"},

	// Gaps: about one tenant's rows, with the tenant known to the caller, but the SQL does not name it.
	"AddSubscriptionSecret":          {unnamed, "subscription_secrets has no tenant_id yet; the caller holds the subscription"},
	"ExpireSubscriptionSecrets":      {unnamed, "subscription_secrets has no tenant_id yet; the caller holds the subscription"},
	"ResendWait":                     {unnamed, "by subscription id alone; the caller read the delivery with its tenant"},
	"TakeResendToken":                {unnamed, "by subscription id alone; the caller read the delivery with its tenant"},
	"IncidentWaiting":                {unnamed, "by subscription id alone; the caller holds the incident, with its tenant"},
	"ExpiredEventsOfIncident":        {unnamed, "by subscription id alone; the caller holds the incident, with its tenant"},
	"GetSubscriptionAny":             {unnamed, "by subscription id alone; the caller holds the incident, with its tenant"},
	"RecordIncidentOperatorEvent":    {unnamed, "incident_operator_events has no tenant_id yet; the caller holds the incident"},
	"IncidentStepEmails":             {unnamed, "notifications by incident id alone; the caller listed the incidents by tenant"},
	"IncidentStepOperatorDeliveries": {unnamed, "by incident id and event id; the events are the internal tenant's, which could be named"},
	"MarkNotificationSent":           {unnamed, "by notification id; the claimed row carries its tenant_id"},
	"RetryNotification":              {unnamed, "by notification id; the claimed row carries its tenant_id"},
	"GiveUpNotification":             {unnamed, "by notification id; the claimed row carries its tenant_id"},

	// Name the tenant, and reach another table by key only.
	"GetDeliveryDetail":          {byKey, "events and subscriptions joined by id to the tenant's delivery"},
	"GetDeliveryToRetry":         {byKey, "subscriptions joined by id to the tenant's delivery"},
	"RetryDelivery":              {byKey, "the subscription checked by id (EXISTS) for the tenant's delivery"},
	"RetryNowDelivery":           {byKey, "the subscription checked by id (EXISTS) for the tenant's delivery"},
	"PublishedDeliveries":        {byKey, "subscriptions joined by id, for their order"},
	"KeepPublishAnswer":          {byKey, "subscriptions joined by id, for their order"},
	"OpenIncidentsOfTenant":      {byKey, "subscriptions joined by id to the tenant's incidents"},
	"OperatorSubscriptionStatus": {byKey, "attempts and deliveries by subscription id of the internal tenant's subscription"},
	"AttemptStatsBySubscription": {byKey, "attempt_minutes and attempts by subscription id of the tenant's subscriptions"},
	"FailingRunAttempts":         {byKey, "attempt_minutes and attempts by subscription id of the tenant's subscriptions"},
	"ValidSubscriptionSecrets":   {byKey, "subscription_secrets (no tenant_id yet) joined to the tenant's subscription"},
}
