package api

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/hookline/hookline/internal/fault"

	"github.com/hookline/hookline/internal/portal"
)

func (a *API) createPortalLink(w http.ResponseWriter, r *http.Request) {
	var in portal.LinkRequest
	// The body is optional: none (or an empty one) takes every default.
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		writeError(w, r, fault.New(fault.PayloadTooLarge, "request body is larger than %d KiB", MaxBody>>10))
		return
	}
	if err != nil {
		writeError(w, r, fault.Invalid("could not read the request body"))
		return
	}
	if strings.TrimSpace(string(body)) != "" {
		if err := decodeBytes(body, &in); err != nil {
			writeError(w, r, err)
			return
		}
	}
	l, err := a.Portal.CreateLink(r.Context(), tenantID(r), caller(r), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	logger(r).Info("portal link created", "tenant_id", tenantID(r), "actor", caller(r).AuditName(),
		"expires_at", l.ExpiresAt, "session_expires_at", l.SessionExpiresAt)
	writeJSON(w, http.StatusCreated, l)
}

func (a *API) endPortalSessions(w http.ResponseWriter, r *http.Request) {
	n, err := a.Portal.EndTenant(r.Context(), tenantID(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	logger(r).Info("portal sessions ended", "tenant_id", tenantID(r), "actor", caller(r).AuditName(), "count", n)
	w.WriteHeader(http.StatusNoContent)
}
