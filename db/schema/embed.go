// Package schema embeds the goose migrations so the server binary can migrate the database itself.
package schema

import "embed"

// FS holds the migrations, applied in file-name order.
//
//go:embed *.sql
var FS embed.FS
