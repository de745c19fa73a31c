package admin

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// historyCard is /admin's "History" card: the history's partitions, how far ahead they are made and
// whether retention keeps up. A failed read is said in the card (and logged) rather than failing the
// whole overview: the tenants' counts are still worth seeing.
func (h *Handler) historyCard(r *http.Request) templates.HistoryCard {
	if h.History == nil {
		return templates.HistoryCard{}
	}
	s, err := h.History.Read(r.Context())
	if err != nil {
		h.Log.Error("reading the history for /admin failed", "err", err)
		return templates.HistoryCard{Shown: true, Error: "The history's partitions could not be read: " + err.Error()}
	}
	return historyView(s)
}

// historyView writes a history Status in the card's words.
func historyView(s history.Status) templates.HistoryCard {
	c := templates.HistoryCard{Shown: true, Interval: core.Words(s.Interval), MadeUntil: dateText(s.MadeUntil)}
	for _, t := range s.Tables {
		line := templates.HistoryTable{Table: t.Table, Partitions: strconv.Itoa(t.Partitions),
			Oldest: dateText(t.Oldest), MadeUntil: dateText(t.MadeUntil), Size: byteSize(t.Bytes)}
		if t.Legacy {
			line.Oldest, line.OldestBefore = dateText(t.Cutover), true
		}
		c.Tables = append(c.Tables, line)
	}
	// Floored: never more ahead than made.
	ahead := math.Floor(s.IntervalsAhead()*10) / 10
	c.Ahead = strconv.FormatFloat(ahead, 'f', 1, 64) + " intervals ahead"
	c.AheadWarn, c.AheadBad = s.ShortAhead(), s.Ahead() < s.Interval
	if c.AheadWarn {
		c.AheadHint = fmt.Sprintf("The maintenance leader makes them every %s: look in its log for “maintenance task failed” with "+
			"task=history_partitions. Past the newest partition, events and finished deliveries are refused.", core.Words(history.TaskInterval))
	}
	c.Retention, c.RetentionBehind, c.Detail = retentionView(s)
	return c
}

// retentionView says whether retention keeps up, how old the oldest finished delivery is and what the
// settings keep.
func retentionView(s history.Status) (verdict string, behind bool, detail string) {
	r := s.Retention
	detail = "No finished delivery is kept."
	if !s.OldestMade.IsZero() {
		detail = "The oldest finished delivery kept was made " + roughly(s.OldestAge()) + " ago."
	}
	kept := func(d time.Duration, after string) string {
		if d <= 0 {
			return "forever"
		}
		return spanWords(d) + " after " + after
	}
	detail += fmt.Sprintf(" Delivered deliveries are kept %s, dead ones %s", kept(r.Delivered, "their last attempt"), kept(r.Dead, "they died"))
	if r.Delivered > 0 || r.Dead > 0 {
		detail += fmt.Sprintf(", each up to one partition (%s) longer", core.Words(s.Interval))
	}
	detail += "."
	over, kind := s.Overdue()
	if !s.Behind() {
		return "keeping up", false, detail
	}
	setting := "HOOKLINE_RETENTION_DELIVERED"
	if kind == "dead" {
		setting = "HOOKLINE_RETENTION_DEAD"
	}
	return "behind by " + roughly(over), true, fmt.Sprintf("A %s delivery is kept %s past %s. %s", kind, roughly(over), setting, detail)
}

// dateText writes a partition bound to the minute (bounds are whole intervals of at least an hour).
func dateText(t time.Time) templates.DateText {
	if t.IsZero() {
		return templates.DateText{}
	}
	return templates.DateText{ISO: t.UTC().Format(time.RFC3339), Text: t.UTC().Format("2006-01-02 15:04 UTC")}
}

// spanWords writes a setting in words, whole days as days: "90 days", "36 hours".
func spanWords(d time.Duration) string {
	if d >= 48*time.Hour && d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + " days"
	}
	return core.Words(d)
}

// roughly writes a long span in its largest unit, rounded down: "12 days", "5 h", "40 min", "30 s".
func roughly(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return strconv.Itoa(int(d/(24*time.Hour))) + " days"
	case d >= time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	case d >= time.Minute:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return strconv.Itoa(int(d/time.Second)) + " s"
}

// byteSize writes a size in binary units: "512 B", "24 KiB", "1.5 MiB", "12 GiB".
func byteSize(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	if v < 10 {
		return strconv.FormatFloat(math.Floor(v*10)/10, 'f', 1, 64) + " " + unit
	}
	return strconv.FormatFloat(math.Floor(v), 'f', 0, 64) + " " + unit
}
