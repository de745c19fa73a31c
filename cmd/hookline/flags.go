package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// The standard flag package stops at the first argument that is not a flag, so `hookline publish
// order.created --data '{}'` would leave --data unparsed. The arguments are split first into flags (each
// with its value) and positional arguments, wherever they are, and the flags alone are given to Parse,
// which still reports unknown flags and bad values in its words.

// parseAnywhere parses fs's flags from anywhere in args and returns the positional arguments in order.
// "--" ends the flags: everything after it is positional.
func parseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	takesValue := func(name string) bool {
		f := fs.Lookup(name)
		return f != nil && !isBool(f)
	}
	var flags, positional []string
	pos, end := split(args, takesValue)
	next := 0
	for i, a := range args {
		switch {
		case next < len(pos) && pos[next] == i:
			positional = append(positional, a)
			next++
		case i != end:
			flags = append(flags, a)
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		// Parse stops early only at what split counts as positional; never here, but not silently.
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return positional, nil
}

// positions are the indexes of args' positional arguments: not a flag (-x, --x, --x=v), not the value
// following a flag that takes one, and everything after "--". A lone "-" is positional (stdin, by
// custom).
func positions(args []string, takesValue func(name string) bool) []int {
	pos, _ := split(args, takesValue)
	return pos
}

// split is positions and the index of the "--" that ends the flags (-1 when none).
func split(args []string, takesValue func(name string) bool) (pos []int, end int) {
	end = -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			end = i
			for j := i + 1; j < len(args); j++ {
				pos = append(pos, j)
			}
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, i)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue(name) && i+1 < len(args) {
			i++ // its value, whatever it looks like
		}
	}
	return pos, end
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// durationFlag is a time.Duration flag that must be positive.
type durationFlag struct{ d time.Duration }

func (f *durationFlag) String() string { return f.d.String() }

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration such as 1s or 500ms")
	}
	if d <= 0 {
		return errors.New("not a positive duration")
	}
	f.d = d
	return nil
}
