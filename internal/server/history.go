package server

import "github.com/hookline/hookline/internal/history"

// watchHistory makes what shows operators the history (/admin's card, the webhook_history_* gauges),
// judged against the retention settings.
func (s *Server) watchHistory() {
	cfg := s.Config
	s.historyMonitor = history.NewMonitor(s.History, history.Retention{Delivered: cfg.RetentionDelivered, Dead: cfg.RetentionDead})
	history.RegisterMetrics(s.registry, s.historyMonitor, s.log.With("component", "metrics"))
}
