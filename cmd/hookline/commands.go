package main

import (
	"flag"
	"time"
)

// defaultTailInterval is how often tail reads the deliveries list.
const defaultTailInterval = time.Second

// commands is the command tree.
func commands() *command {
	return &command{
		name: "",
		subs: []*command{
			{
				name:  "publish",
				args:  "<type> --data '<json>'|@file [--idempotency-key k] [--ordering-key k]",
				short: "publish an event to the tenant's subscriptions",
				long: `
Publishes an event of <type> whose payload is --data: a JSON object, given inline, or @file to read it
from a file (@- from stdin). Prints the event's id and its deliveries, one per matching subscription.
With --idempotency-key, publishing the same type and payload again answers the first publish (the same
event id) and creates nothing.`,
				flags: func(fs *flag.FlagSet, o *opts) {
					fs.StringVar(&o.data, "data", "", "the payload: a JSON object, or @file (@- for stdin)")
					fs.StringVar(&o.idempotencyKey, "idempotency-key", "", "a repeated publish with this key answers the first and creates nothing")
					fs.StringVar(&o.orderingKey, "ordering-key", "", "deliver the events sharing this key in order (1 to 128 printable characters)")
				},
				run: runPublish,
			},
			{
				name:  "deliveries",
				short: "the tenant's deliveries: list, read, retry",
				subs: []*command{
					{
						name:  "deliveries list",
						args:  "[--state dead] [--limit n]",
						short: "list deliveries, newest first",
						long: `
Lists the tenant's deliveries, newest first, --limit of them (50 by default), fetching pages as needed.
--state takes states separated by commas: pending, retrying, in_flight, delivered, failed, expired, or
dead (failed and expired). When more remain, the cursor of the next page is printed on stderr; give it
with --cursor to go on.`,
						flags: func(fs *flag.FlagSet, o *opts) {
							fs.StringVar(&o.state, "state", "", "only these `states`, comma-separated (dead = failed,expired)")
							fs.IntVar(&o.limit, "limit", 50, "list at most `n` deliveries")
							fs.StringVar(&o.cursor, "cursor", "", "go on from this cursor (printed after a list that stopped at --limit)")
							fs.StringVar(&o.subscription, "subscription", "", "only this subscription's deliveries (`id`)")
							fs.StringVar(&o.event, "event", "", "only this event's deliveries (the `id` publish printed)")
							fs.StringVar(&o.eventType, "event-type", "", "only this event `type`")
						},
						run: runDeliveriesList,
					},
					{
						name:  "deliveries get",
						args:  "<id>",
						short: "a delivery with its request and attempts",
						run:   runDeliveriesGet,
					},
					{
						name:  "deliveries retry",
						args:  "<id>",
						short: "put a failed, expired or delivered delivery back in the queue",
						long: `
Puts the delivery back in the queue with a fresh schedule: a retry of a dead one (failed, expired), a
resend of a delivered one. Pending and in-flight deliveries are refused.`,
						run: runDeliveriesRetry,
					},
				},
			},
			{
				name:  "tail",
				args:  "[--interval 1s]",
				short: "follow the tenant's deliveries as they change",
				long: `
Follows the tenant's deliveries from now on: a line for each new delivery and another each time its
state changes or an attempt is made, until interrupted (Ctrl-C). It reads the deliveries list every
--interval (a second by default), newest first, and follows the newest 1,000. With --json, each line is
the API's JSON of the delivery.`,
				flags: func(fs *flag.FlagSet, o *opts) {
					o.interval.d = defaultTailInterval
					fs.Var(&o.interval, "interval", "how often to read the deliveries list (a `duration`: 1s, 500ms)")
				},
				run: runTail,
			},
			{
				name:  "replay",
				args:  "--from <RFC3339> --to <RFC3339> [--subscription id] [--dry-run]",
				short: "put dead deliveries back in the queue in bulk (admin)",
				long: `
An operator's bulk replay (an admin token): every dead delivery (failed or expired) created in
[--from, --to) goes back in the queue, its first attempt spread over five minutes. --subscription and
--tenant narrow it to a subscription's or a tenant's. --dry-run changes nothing and prints how many
deliveries match and up to 20 of them.`,
				flags: func(fs *flag.FlagSet, o *opts) {
					fs.StringVar(&o.from, "from", "", "deliveries created at or after this `time` (RFC 3339)")
					fs.StringVar(&o.to, "to", "", "deliveries created before this `time` (RFC 3339)")
					fs.StringVar(&o.subscription, "subscription", "", "only this subscription's deliveries (`id`)")
					fs.BoolVar(&o.dryRun, "dry-run", false, "change nothing: print what would be replayed")
				},
				run: runReplay,
			},
			{
				name:  "event-types",
				short: "the event catalogue: list, import",
				subs: []*command{
					{
						name:  "event-types list",
						args:  "[--archived]",
						short: "the event catalogue, by group and name",
						flags: func(fs *flag.FlagSet, o *opts) {
							fs.BoolVar(&o.archived, "archived", false, "list archived types too")
						},
						run: runEventTypesList,
					},
					{
						name:  "event-types import",
						args:  "<openapi.yaml> [--dry-run]",
						short: "import the webhooks of an OpenAPI 3.1 document (admin)",
						long: `
Every entry of the document's webhooks becomes an event type, or updates the type of that name (an
admin token). The document is JSON or YAML. Webhooks that cannot become types are printed on stderr and
make the exit status 1; the others are imported. --dry-run changes nothing and prints what would change.`,
						flags: func(fs *flag.FlagSet, o *opts) {
							fs.BoolVar(&o.dryRun, "dry-run", false, "change nothing: print what would change")
						},
						run: runEventTypesImport,
					},
				},
			},
			{
				name:  "listen",
				args:  "--forward-to <url> [--events types] [--name n]",
				short: "forward the tenant's events to a local URL, signed as in production",
				long: `
Pulls the tenant's events and POSTs each to --forward-to as the webhook Hookline would send: the same
body ({"type", "timestamp", "data"}), content-type and user-agent, webhook-id (the event id), a fresh
webhook-timestamp and webhook-signature signed with the subscription's secret. Develop a receiver on a
laptop, behind a firewall, against real events; it verifies them as it will in production.

It uses a polling subscription of the tenant's, described "hookline listen: <name>": created at the
first start, used again by every later start with the same --name (its event types set to --events;
resumed if the server disabled it; a paused one is refused).
The signing secret is printed once at the start (on stderr): read from the new subscription's answer,
or from GET .../secret when it is used again (a call the activity log records as secret.revealed).

One line per delivery the local server answered: time, event type, delivery id, the local status, how
long it took (--json: one JSON object per line). Any answer, even a 500, is printed and counts as
handled; a page of deliveries (20 at most) is committed once every one has been answered. While the
local server cannot be reached (connection refused, no answer within 30 s) the same delivery is tried
again with a backoff and nothing is committed; likewise while the API cannot be reached. Stopped (Ctrl-C),
killed or disconnected and started again, it goes on from the committed cursor: nothing published
meanwhile is lost, and the deliveries of a page forwarded but not committed are forwarded again
(at least once: dedupe by webhook-id).

--name (default: this machine's host name) names the subscription and its consumer: run one listener
per name. The token needs the scopes subscriptions:read and :write, deliveries:read and :write.`,
				flags: func(fs *flag.FlagSet, o *opts) {
					fs.StringVar(&o.forwardTo, "forward-to", "", "POST each event to this `url`, e.g. http://localhost:3000/webhooks")
					fs.StringVar(&o.events, "events", "", "only these event `types`, comma-separated (patterns such as order.* too); every type when absent")
					fs.StringVar(&o.name, "name", "", "the listener's `name`: its subscription and consumer (default: the host name)")
					o.interval.d = defaultListenInterval
					fs.Var(&o.interval, "interval", "wait this `duration` before polling again when nothing is waiting (1s by default)")
				},
				run: runListen,
			},
			{
				name:  "version",
				short: "print the build: version, commit, Go version and platform",
				run:   runVersion,
			},
		},
	}
}
