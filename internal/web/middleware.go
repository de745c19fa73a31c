package web

import (
	"net/http"
	"strings"
)

func chain(hd http.Handler, mw ...func(http.Handler) http.Handler) http.Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		hd = mw[i](hd)
	}
	return hd
}

// securityHeaders sets the headers every dashboard page carries: a strict CSP (no inline scripts or
// styles), no framing (or only by HOOKLINE_PORTAL_FRAME_ANCESTORS), no sniffing, and no caching of pages
// that show a tenant's data.
func (h *Handler) securityHeaders(next http.Handler) http.Handler {
	frame := "'none'"
	if len(h.FrameAncestors) > 0 {
		frame = strings.Join(h.FrameAncestors, " ")
	}
	csp := "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
		"form-action 'self'; frame-ancestors " + frame + "; base-uri 'none'"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		if len(h.FrameAncestors) > 0 {
			// X-Frame-Options knows no list of origins, and browsers that know CSP ignore it anyway; sent
			// (by the server's base headers, DENY) it would block the frames CSP allows in older ones.
			hd.Del("X-Frame-Options")
		} else {
			hd.Set("X-Frame-Options", "DENY")
		}
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// hsts tells browsers to use only https for a year, on every answer when the public URL is https and on
// answers to requests that came over TLS. Over plain http browsers ignore it, and sending it when the
// site is not served over https would only mislead.
func (h *Handler) hsts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.httpsOnly || h.overHTTPS(r) {
			w.Header().Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// secureCookies adds the Secure attribute to every cookie set on a request that came over TLS, directly or
// through a trusted proxy. (With an https public URL every cookie is Secure from the start.)
func (h *Handler) secureCookies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.overHTTPS(r) {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&secureWriter{ResponseWriter: w}, r)
	})
}

type secureWriter struct {
	http.ResponseWriter
	done bool
}

func (w *secureWriter) fix() {
	if w.done {
		return
	}
	w.done = true
	cookies := w.Header()["Set-Cookie"]
	for i, c := range cookies {
		if !strings.Contains(strings.ToLower(c), "; secure") {
			cookies[i] = c + "; Secure"
		}
	}
}

func (w *secureWriter) WriteHeader(code int) {
	w.fix()
	w.ResponseWriter.WriteHeader(code)
}

func (w *secureWriter) Write(b []byte) (int, error) {
	w.fix()
	return w.ResponseWriter.Write(b)
}

func (w *secureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
