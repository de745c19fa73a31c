package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The default listener name is the host name made a consumer name, whatever the host name is.
func TestDefaultListenerName(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"laptop":                       "laptop",
		"Anna's MacBook Pro.local":     "Anna-s-MacBook-Pro.local",
		"dev_box-2.example.com":        "dev_box-2.example.com",
		"ünïcode-host":                 "n-code-host",
		"":                             "listener",
		"---":                          "listener",
		"(x)":                          "x",
		strings.Repeat("a", 70):        strings.Repeat("a", 64),
		strings.Repeat("a", 63) + " b": strings.Repeat("a", 63),
	} {
		got := defaultListenerName(host)
		if got != want {
			t.Errorf("defaultListenerName(%q) = %q, want %q", host, got, want)
		}
		if !listenerName.MatchString(got) {
			t.Errorf("defaultListenerName(%q) = %q, not a consumer name", host, got)
		}
	}
}

func TestEventFilters(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"":                           {},
		" , ,":                       {},
		"invoice.*":                  {"invoice.*"},
		"invoice.*, order.created ,": {"invoice.*", "order.created"},
		"a,b,a":                      {"a", "b"},
	} {
		if got := eventFilters(in); !slices.Equal(got, want) || got == nil {
			t.Errorf("eventFilters(%q) = %#v, want %#v", in, got, want)
		}
	}
	if !sameFilters([]string{"b", "a"}, []string{"a", "b", "a"}) || sameFilters(nil, []string{"a"}) || !sameFilters(nil, []string{}) {
		t.Error("sameFilters compares sets")
	}
}

func TestMilliseconds(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "0.0ms", 412 * time.Microsecond: "0.4ms", 9949 * time.Microsecond: "9.9ms", 10 * time.Millisecond: "10ms",
		1234567 * time.Microsecond: "1234ms",
	} {
		if got := milliseconds(d); got != want {
			t.Errorf("milliseconds(%s) = %s, want %s", d, got, want)
		}
	}
}
