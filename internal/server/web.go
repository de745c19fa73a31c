package server

import "github.com/go-chi/chi/v5"

// mountWeb mounts the dashboard. (The dashboard issue fills this in.)
func (s *Server) mountWeb(r chi.Router) {}
