package web

import (
	"net/http"

	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/web/templates"
)

// operatorCard is /admin's "Operator notifications" card: off without HOOKLINE_OPERATOR_WEBHOOK_URL,
// otherwise the state of the internal subscription that carries them (the internal tenant is not listed
// among the customers).
func (h *Handler) operatorCard(r *http.Request) (templates.OperatorCard, error) {
	if h.incidents == nil {
		return templates.OperatorCard{}, nil
	}
	st, err := h.incidents.OperatorStatus(r.Context())
	if err != nil || st == nil {
		return templates.OperatorCard{}, err
	}
	dead := itoa(st.Dead)
	if st.Dead >= incidents.DeadUpTo {
		dead += "+"
	}
	return templates.OperatorCard{
		On: true, URL: st.URL, State: st.State, StateClass: subStateClass(st.State), DisabledReason: st.DisabledReason,
		CircuitOpen: st.Circuit != "closed", CircuitOpened: h.timePtr(st.CircuitOpenedAt),
		FailingSince: h.timePtr(st.FailingSince), LastError: st.LastError, LastErrorAt: h.timePtr(st.LastErrorAt),
		Dead: dead, DeadBad: st.Dead > 0,
	}, nil
}
