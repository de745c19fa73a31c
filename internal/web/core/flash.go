package core

import (
	"net/http"
	"strings"

	"github.com/hookline/hookline/web/templates"
)

// keyFlash is the session key of the one-time message.
const keyFlash = "flash"

// SetFlash stores a one-time message shown by the next page.
func (h *Handler) SetFlash(r *http.Request, kind, msg string) {
	h.Sessions.Put(r.Context(), keyFlash, kind+"\n"+msg)
}

// SetFlashLink is setFlash with a link after the message (label, to a local path): what an action made.
func (h *Handler) SetFlashLink(r *http.Request, kind, msg, href, label string) {
	h.Sessions.Put(r.Context(), keyFlash, kind+"\n"+msg+"\n"+href+"\n"+label)
}

// popFlash takes the pending message, if any. A request whose session did not load has none.
func (h *Handler) popFlash(r *http.Request) (f *templates.Flash) {
	defer func() {
		if recover() != nil { // scs panics without session data in the context
			f = nil
		}
	}()
	s := h.Sessions.PopString(r.Context(), keyFlash)
	if s == "" {
		return nil
	}
	parts := strings.SplitN(s, "\n", 4)
	f = &templates.Flash{Kind: parts[0]}
	if len(parts) > 1 {
		f.Message = parts[1]
	}
	if len(parts) == 4 {
		f.Href, f.LinkText = parts[2], parts[3]
	}
	return f
}
