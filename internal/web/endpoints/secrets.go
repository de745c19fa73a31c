package endpoints

import (
	"net/http"

	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

func (h *Handler) showSecrets(w http.ResponseWriter, r *http.Request, rotate bool) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	base := "/subscriptions/" + s.ID.String()
	p := templates.SecretPage{
		Layout: h.TenantLayout(r, tenantID, "Signing secret", append(h.TenantCrumbs(r, tenantID),
			templates.Crumb{Label: subName(s), Href: base}, templates.Crumb{Label: "Signing secret"})...),
		Name: subName(s), Back: base, RotateAction: base + "/rotate-secret", Rotated: rotate,
	}
	if rotate {
		// Only the new secret is shown (the old ones are a Reveal away). The old ones sign until at least
		// the rotation's moment plus the overlap: the moment is taken before the service's own, so the
		// page never promises a second more than they have.
		until := h.Now().Add(subscriptions.SecretOverlap)
		fresh, err := h.Subs.RotateSecret(r.Context(), tenantID, s.ID)
		if err != nil {
			h.Fail(w, r, err)
			return
		}
		p.Secrets, p.OldUntil = []templates.SecretRow{{Secret: fresh}}, h.TimeView(until)
		h.Render(w, r, http.StatusOK, templates.SigningSecret(p))
		return
	}
	secrets, err := h.Subs.Secrets(r.Context(), tenantID, s.ID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	for _, sec := range secrets {
		row := templates.SecretRow{Secret: sec.Secret}
		if sec.ExpiresAt != nil {
			row.Until = h.TimeView(*sec.ExpiresAt)
		}
		p.Secrets = append(p.Secrets, row)
	}
	h.Render(w, r, http.StatusOK, templates.SigningSecret(p))
}
