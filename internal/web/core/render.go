package core

import (
	"bytes"
	"net/http"

	"github.com/a-h/templ"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/principal"
	"github.com/hookline/hookline/web/templates"
)

// Layout fills the frame of a page: title, breadcrumb, the signed-in user, the pending flash message and,
// for a customer, the banners of their tenant's open incidents and of client certificates expiring soon.
// Every customer page comes through here, so the banners are on all of them without each handler asking.
func (h *Handler) Layout(r *http.Request, title string, crumbs ...templates.Crumb) templates.Layout {
	l := h.Frame(r, title, crumbs...)
	if tenantID, ok := Caller(r).Tenant(); ok {
		l.Incidents = h.IncidentBanners(r, tenantID)
		l.Certificates = h.CertificateBanners(r, tenantID)
	}
	return l
}

// TenantLayout is layout for a page of tenantID's (a subscription, a delivery): the banners are that tenant's,
// which for an operator opening another tenant's page is not their own.
func (h *Handler) TenantLayout(r *http.Request, tenantID uuid.UUID, title string, crumbs ...templates.Crumb) templates.Layout {
	l := h.Frame(r, title, crumbs...)
	l.Incidents = h.IncidentBanners(r, tenantID)
	l.Certificates = h.CertificateBanners(r, tenantID)
	return l
}

// Frame is layout without the incident banner, for operator pages.
func (h *Handler) Frame(r *http.Request, title string, crumbs ...templates.Crumb) templates.Layout {
	l := templates.Layout{Title: title, Crumbs: crumbs, Brand: h.Brand.Name, BrandCSS: h.Brand.Accent != nil,
		FrameOrigins: h.frameOrigins()}
	l.LogoURL, l.IconURL = h.marks()
	if p, ok := principal.FromContext(r.Context()); ok {
		l.User, l.Admin = p.Label(), p.Admin
		_, l.HasTenant = p.Tenant()
	}
	if s, ok := CurrentPortal(r); ok {
		l.Portal, l.PortalUser, l.ReadOnly = true, s.Label(), !s.CanChange()
		if s.Theme != portal.ThemeAuto {
			l.Theme = s.Theme
		}
		l.User = s.Label()
	}
	l.Flash = h.popFlash(r)
	return l
}

// TenantCrumbs start the breadcrumb of a tenant's page: the customer's own list, or for an operator the
// admin pages and the tenant.
func (h *Handler) TenantCrumbs(r *http.Request, tenantID uuid.UUID) []templates.Crumb {
	p := Caller(r)
	if own, ok := p.Tenant(); !p.Admin || (ok && own == tenantID) {
		return []templates.Crumb{{Label: "Subscriptions", Href: "/"}}
	}
	name := "Tenant"
	if t, err := h.Tenants.GetTenant(r.Context(), tenantID); err == nil {
		name = t.Name
	}
	return []templates.Crumb{{Label: "Admin", Href: "/admin"}, {Label: name, Href: "/admin/tenants/" + tenantID.String()}}
}

// Render writes a page; the page is rendered in full first, so a template error is a clean 500.
func (h *Handler) Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		httpx.Logger(r.Context()).Error("render page", "err", err, "path", httpx.LogPath(r.URL.Path))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// Fail renders an error page: a fault's own status and message, anything else as a logged 500.
func (h *Handler) Fail(w http.ResponseWriter, r *http.Request, err error) {
	fe := fault.As(err)
	if fe != nil && fe.Code == fault.NotFound {
		h.NotFound(w, r)
		return
	}
	p := templates.ErrorPage{Layout: h.Layout(r, "Error"), CorrelationID: httpx.CorrelationID(r.Context())}
	if fe != nil && fe.Code != fault.Internal {
		p.Status, p.Heading, p.Message = fe.Code.Status(), "That did not work", fe.Message
	} else {
		httpx.Logger(r.Context()).Error("dashboard error", "err", err, "method", r.Method, "path", httpx.LogPath(r.URL.Path))
		p.Status, p.Heading = http.StatusInternalServerError, "Something went wrong"
		p.Message = "We could not show this page. Please try again in a moment; if it keeps happening, tell us the reference below."
	}
	p.Title = p.Heading
	h.Render(w, r, p.Status, templates.ErrorView(p))
}

// NotFound is the 404 page: for unknown paths and for ids that are not the user's tenant's.
func (h *Handler) NotFound(w http.ResponseWriter, r *http.Request) {
	l := h.Layout(r, "Not found", templates.Crumb{Label: "Subscriptions", Href: "/"}, templates.Crumb{Label: "Not found"})
	h.Render(w, r, http.StatusNotFound, templates.ErrorView(templates.ErrorPage{
		Layout: l, Status: http.StatusNotFound, Heading: "Page not found",
		Message: "There is nothing here, or it belongs to another account.",
	}))
}

// CrossOrigin answers a state-changing request from another site (CSRF) with 403.
func (h *Handler) CrossOrigin(w http.ResponseWriter, r *http.Request) {
	httpx.Logger(r.Context()).Warn("cross-origin request refused", "method", r.Method, "path", httpx.LogPath(r.URL.Path),
		"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
	h.Render(w, r, http.StatusForbidden, templates.ErrorView(templates.ErrorPage{
		Layout: templates.Layout{Title: "Forbidden", Brand: h.Brand.Name, IconURL: h.IconURL()}, Status: http.StatusForbidden, Heading: "Request refused",
		Message: "This form was sent from another site, so it was not carried out. Go back to the page and try again.",
	}))
}
