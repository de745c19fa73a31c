// Package eventtype is the syntax of an event type ("invoice.paid"), a leaf shared by the publisher, the
// catalogue, subscriptions' filters and the lists' filters, so none of them imports another for it.
package eventtype

import "regexp"

// syntax: letters, digits and . _ - : /, starting with a letter or digit, at most 128 characters.
var syntax = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)

// Valid reports whether s is a well-formed event type.
func Valid(s string) bool { return syntax.MatchString(s) }
