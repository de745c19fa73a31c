// Package web holds the dashboard's static assets (web/static), embedded in the binary, and its templ
// templates (web/templates).
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var embedded embed.FS

// Static is the content of web/static, served by the dashboard at /static/.
var Static, _ = fs.Sub(embedded, "static")
