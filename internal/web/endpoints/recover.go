package endpoints

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// keyRecoverSince is the session key carrying a recover form's since value back to the subscription's page.
const keyRecoverSince = "recover_since"

// Recover is a customer's self-service replay of one subscription's dead deliveries. action=preview is a
// dry run that says how many would be sent and renders the page with a confirm button; action=confirm
// starts it and leads back with a message. Refusals (too many, too old, one running) come back as a
// warning, never an error page.
func (h *Handler) Recover(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		h.Fail(w, r, fault.Invalid("the form could not be read"))
		return
	}
	// The page leads back to a fixed URL: what was typed travels in the session (keepRecoverSince), never in
	// the Location header.
	back := "/subscriptions/" + s.ID.String()
	sinceText := r.PostFormValue("since")
	h.keepRecoverSince(r, s.ID, sinceText)
	since, err := params.Form.Time("Since", sinceText)
	if err == nil && since == nil {
		err = fault.Invalid("choose since when to recover failed deliveries")
	}
	action := r.PostFormValue("action")
	var rep replays.Replay
	if err == nil {
		switch action {
		case "preview", "confirm":
			rep, err = h.Replays.Recover(r.Context(), tenantID, s.ID, *since, action == "preview", core.Caller(r).AuditName())
		default:
			err = fault.Invalid("action must be preview or confirm")
		}
	}
	if err != nil {
		fe := fault.As(err)
		if fe == nil || fe.Code == fault.Internal || fe.Code == fault.NotFound {
			h.Fail(w, r, err)
			return
		}
		prefix := "Not recovered: "
		if action == "preview" {
			prefix = "Not previewed: "
		}
		h.SetFlash(r, "warning", prefix+fe.Message+".")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	when := since.UTC().Format("2006-01-02 15:04") + " UTC"
	if action == "preview" {
		rec := templates.RecoverForm{Since: sinceText, CanConfirm: rep.Matched > 0,
			Preview: fmt.Sprintf("No dead deliveries since %s: nothing to recover.", when)}
		if rep.Matched > 0 {
			rec.Preview = fmt.Sprintf("%s since %s would be replayed, %s.",
				templates.Plural(rep.Matched, "dead delivery", "dead deliveries"), when, core.SpreadWords(rep.SpreadSeconds))
		}
		h.renderSubscription(w, r, tenantID, s, rec)
		return
	}
	if rep.Matched == 0 {
		h.SetFlash(r, "info", fmt.Sprintf("Nothing to recover: no dead deliveries since %s.", when))
	} else {
		h.SetFlash(r, "success", fmt.Sprintf("Recovering %s since %s: they are being sent again, %s.",
			templates.Plural(rep.Matched, "dead delivery", "dead deliveries"), when, core.SpreadWords(rep.SpreadSeconds)))
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// maxKeptSince bounds the since value kept for the page: a date and time is 16 characters; anything much
// longer is not one, and the form starts from its default again.
const maxKeptSince = 64

// keepRecoverSince remembers, for the subscription's page the recover leads back to, the since value that
// was typed, so the form shows it again.
func (h *Handler) keepRecoverSince(r *http.Request, subID uuid.UUID, since string) {
	if since == "" || len(since) > maxKeptSince {
		return
	}
	h.Sessions.Put(r.Context(), keyRecoverSince, subID.String()+"\n"+since)
}

// recoverSince takes the since value kept for this subscription's page, if any.
func (h *Handler) recoverSince(r *http.Request, subID uuid.UUID) string {
	kept := h.Sessions.PopString(r.Context(), keyRecoverSince)
	id, since, ok := strings.Cut(kept, "\n")
	if !ok || id != subID.String() {
		return ""
	}
	return since
}
