package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/params"
)

// The event catalogue is global: the admin changes it, any valid token reads it.

// boolQuery parses an optional true/false query parameter; any other parameter is INVALID_REQUEST.
func boolQuery(r *http.Request, name string) (bool, error) {
	q := r.URL.Query()
	if err := params.API.Known(q, name); err != nil {
		return false, err
	}
	b, _, err := params.Bool(q, name)
	return b, err
}

// eventTypeName is the {eventType} path parameter; a type with a slash comes escaped (a%2Fb).
func eventTypeName(r *http.Request) string { return httpx.PathValue(r, "eventType") }

func (a *API) listEventTypes(w http.ResponseWriter, r *http.Request) {
	archived, err := boolQuery(r, "include_archived")
	if err != nil {
		writeError(w, r, err)
		return
	}
	types, err := a.Catalogue.List(r.Context(), archived)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": types})
}

func (a *API) createEventType(w http.ResponseWriter, r *http.Request) {
	var in catalogue.Input
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	t, err := a.Catalogue.Create(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

func (a *API) getEventType(w http.ResponseWriter, r *http.Request) {
	t, err := a.Catalogue.Get(r.Context(), eventTypeName(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (a *API) updateEventType(w http.ResponseWriter, r *http.Request) {
	var in catalogue.Input
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	t, err := a.Catalogue.Update(r.Context(), eventTypeName(r), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (a *API) archiveEventType(w http.ResponseWriter, r *http.Request) {
	if err := a.Catalogue.Archive(r.Context(), eventTypeName(r)); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// importEventTypes takes an OpenAPI 3.1 document, JSON or YAML, of at most catalogue.MaxImport bytes.
func (a *API) importEventTypes(w http.ResponseWriter, r *http.Request) {
	dry, err := boolQuery(r, "dry_run")
	if err != nil {
		writeError(w, r, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, catalogue.MaxImport))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeError(w, r, fault.New(fault.PayloadTooLarge, "the OpenAPI document is larger than %d KiB", catalogue.MaxImport>>10))
		return
	}
	if err != nil {
		writeError(w, r, fault.Invalid("could not read the request body"))
		return
	}
	res, err := a.Catalogue.Import(r.Context(), body, dry)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
