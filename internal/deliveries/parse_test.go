package deliveries

import (
	"slices"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
)

// FuzzParseStates parses arbitrary state lists: never a panic; an error is INVALID_REQUEST; otherwise every
// state is a real one, listed once, and "retrying" alone asks for retrying pending deliveries only.
func FuzzParseStates(f *testing.F) {
	for _, s := range []string{"", ",", "dead", "retrying", "dead,retrying", "pending, delivered ,failed", "pending,pending",
		"in_flight,expired", "DEAD", "dead,,dead", "retrying,retrying", "x", "\x00", "\xff", " , ", strings.Repeat("dead,", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		states, retrying, err := ParseStates(list)
		if err != nil {
			if fe := fault.As(err); fe == nil || fe.Code != fault.InvalidRequest {
				t.Fatalf("ParseStates(%q): %v is not INVALID_REQUEST", list, err)
			}
			if states != nil || retrying != nil {
				t.Fatalf("ParseStates(%q): error with a result", list)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range states {
			if !delivery.State(s).Valid() || seen[s] {
				t.Fatalf("ParseStates(%q) = %v: invalid or repeated state", list, states)
			}
			seen[s] = true
		}
		if retrying != nil && (!*retrying || !slices.Equal(states, []string{string(delivery.Pending)})) {
			t.Fatalf("ParseStates(%q) = %v, retrying %v", list, states, *retrying)
		}
		// What it returns parses to itself.
		again, r2, err := ParseStates(strings.Join(states, ","))
		if err != nil || !slices.Equal(again, states) || (retrying == nil && r2 != nil) {
			t.Fatalf("ParseStates(%q) = %v, which parses to %v, %v, %v", list, states, again, r2, err)
		}
	})
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]int32{"404": {404, 404}, "4xx": {400, 499}, "5XX": {500, 599}, "200": {200, 200}, "1xx": {100, 199}} {
		lo, hi, err := ParseStatus(in)
		if err != nil || lo == nil || hi == nil || *lo != want[0] || *hi != want[1] {
			t.Errorf("ParseStatus(%q) = %v, %v, %v; want %v", in, lo, hi, err, want)
		}
	}
	if lo, hi, err := ParseStatus(""); lo != nil || hi != nil || err != nil {
		t.Errorf("empty status filters: %v %v %v", lo, hi, err)
	}
	for _, in := range []string{"4x", "44xx", "99", "600", "6xx", "0xx", "abc", " 404", "40 4", "4xx,5xx", "x4x"} {
		if _, _, err := ParseStatus(in); err == nil {
			t.Errorf("ParseStatus(%q) accepted", in)
		}
	}
}
