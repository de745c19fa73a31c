// Command hookline is Hookline's command line: publish events, read and retry deliveries, follow them as
// they change, replay dead ones and manage the event catalogue, from a shell or a script.
//
//	export HOOKLINE_URL=https://hooks.example.com HOOKLINE_TOKEN=hl_...
//	hookline publish order.created --data '{"id": "ord_1"}' --idempotency-key ord_1-created
//	hookline deliveries list --state dead
//	hookline tail
//
// It is built on the Go SDK (package client) alone, as any other program using the API would be: nothing
// of internal/ (a test checks). Exit status: 0 on success, 1 on an API, network or file error (the API's
// message on stderr), 2 on bad usage (with a usage line).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/hookline/hookline/client"
)

// Stamped by release builds (deploy/image does), as the server's internal/version is:
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=<sha>"
//
// Left empty, `hookline version` reads what the Go toolchain recorded.
var (
	version string
	commit  string
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the API's error, a network error, a file that cannot be read
	exitUsage = 2 // an unknown command or flag, a missing argument, --data that is not JSON
)

// globals are the flags every command takes.
type globals struct {
	url, token, tenant string
	json               bool
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.url, "url", "", "the server's base `URL`, e.g. https://hooks.example.com (default $HOOKLINE_URL)")
	fs.StringVar(&g.token, "token", "", "an API `token` (hl_...) or the admin token (default $HOOKLINE_TOKEN)")
	fs.StringVar(&g.tenant, "tenant", "", "the tenant (its `id`); needed with an admin token, else the token's own")
	fs.BoolVar(&g.json, "json", false, "print the API's JSON (one object; tail and listen: one object per line)")
}

// command is one command of the tree: a leaf runs, a parent dispatches to its subcommands.
type command struct {
	name  string // its words after "hookline", e.g. "deliveries list"
	args  string // what follows the name in the usage line
	short string // one line for the command list
	long  string // what --help adds
	flags func(fs *flag.FlagSet, o *opts)
	run   func(ctx context.Context, in *invocation) error
	subs  []*command
}

// opts holds every command's own flags; each command registers the ones it takes.
type opts struct {
	data, idempotencyKey, orderingKey string
	state, cursor, subscription       string
	event, eventType                  string
	limit                             int
	from, to                          string
	dryRun, archived                  bool
	interval                          durationFlag
	forwardTo, events, name           string
}

func (c *command) usageLine() string {
	line := "hookline " + c.name
	if c.args != "" {
		line += " " + c.args
	}
	return line
}

// usageError is bad usage: printed with the command's usage line, exit status 2.
type usageError struct {
	cmd *command
	msg string
}

func (e *usageError) Error() string { return e.msg }

func usagef(cmd *command, format string, args ...any) *usageError {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// invocation is one run of a leaf command: its flags, arguments, output and configuration.
type invocation struct {
	cmd    *command
	g      globals
	o      opts
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string

	c *client.Client
}

// run is the whole program, apart from the process: its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	root := commands()
	takesValue := valueFlags(root)
	cmd, rest := root, args
	// Walk down the tree by the first arguments that are not flags or their values: `hookline deliveries
	// list ...`, `hookline --json deliveries --state dead list` alike.
	for len(cmd.subs) > 0 {
		pos := positions(rest, takesValue)
		if len(pos) == 0 {
			break
		}
		i := pos[0]
		word := rest[i]
		rest = append(rest[:i:i], rest[i+1:]...)
		if cmd == root && word == "help" {
			return help(root, rest, stdout, stderr)
		}
		next := cmd.sub(word)
		if next == nil {
			return usage(stderr, usagef(cmd, "unknown command %q", word))
		}
		cmd = next
	}
	in := &invocation{cmd: cmd, stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	fs := in.flagSet()
	positional, err := parseAnywhere(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(stdout, cmd, fs)
		return exitOK
	}
	if err != nil {
		return usage(stderr, &usageError{cmd: cmd, msg: flagMessage(err)})
	}
	if cmd.run == nil {
		if len(positional) > 0 {
			return usage(stderr, usagef(cmd, "unknown command %q", positional[0]))
		}
		return usage(stderr, usagef(cmd, "a command is missing"))
	}
	in.args = positional
	return report(stderr, cmd.run(ctx, in))
}

// flagSet is the flags in.cmd takes: the global ones and its own, parsed into in.
func (in *invocation) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(in.cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	in.g.register(fs)
	if in.cmd.flags != nil {
		in.cmd.flags(fs, &in.o)
	}
	return fs
}

// valueFlags says, of any flag of any command, whether it takes a value (the next argument, unless given
// as --name=value): what finding the command's words among flags needs before the command is known.
func valueFlags(root *command) func(name string) bool {
	values := map[string]bool{}
	var walk func(c *command)
	walk = func(c *command) {
		in := &invocation{cmd: c}
		in.flagSet().VisitAll(func(f *flag.Flag) { values[f.Name] = !isBool(f) })
		for _, s := range c.subs {
			walk(s)
		}
	}
	walk(root)
	return func(name string) bool { return values[name] }
}

// flagMessage is the flag package's complaint, with flags spelled as this command's help spells them.
func flagMessage(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + name
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + name + " needs a value"
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		return "bad value " + strings.Replace(rest, " for flag -", " for --", 1)
	}
	return msg
}

// report turns a command's error into its message on stderr and the exit status.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return usage(stderr, ue)
	}
	if errors.Is(err, errReported) {
		return exitError
	}
	// The SDK's own errors (not the API's) say "client: ", which means nothing to a shell user.
	fmt.Fprintln(stderr, "hookline:", strings.TrimPrefix(err.Error(), "client: "))
	var ae *client.APIError
	if errors.As(err, &ae) {
		for _, d := range ae.Details {
			fmt.Fprintf(stderr, "  %s: %s\n", orRoot(d.Path), d.Message)
		}
		if ae.Status >= 500 && ae.CorrelationID != "" {
			// A server error is the one to report; its correlation id finds it in the server's log.
			fmt.Fprintln(stderr, "  correlation id:", ae.CorrelationID)
		}
	}
	return exitError
}

func orRoot(pointer string) string {
	if pointer == "" {
		return "(the payload)"
	}
	return pointer
}

func usage(stderr io.Writer, e *usageError) int {
	name := "hookline"
	if e.cmd != nil && e.cmd.name != "" {
		name += " " + e.cmd.name
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, e.msg)
	if e.cmd != nil {
		if len(e.cmd.subs) > 0 {
			words := make([]string, len(e.cmd.subs))
			for i, s := range e.cmd.subs {
				words[i] = s.word()
			}
			fmt.Fprintf(stderr, "usage: %s <command> [arguments] [flags]; commands: %s\n",
				strings.TrimSpace("hookline "+e.cmd.name), strings.Join(words, ", "))
		} else {
			fmt.Fprintln(stderr, "usage:", e.cmd.usageLine())
		}
		fmt.Fprintf(stderr, "Run '%s --help' for more.\n", strings.TrimSpace("hookline "+e.cmd.name))
	}
	return exitUsage
}

// word is the command's own word, the last of its name.
func (c *command) word() string {
	f := strings.Fields(c.name)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

func (c *command) sub(word string) *command {
	for _, s := range c.subs {
		if s.word() == word {
			return s
		}
	}
	return nil
}

// help is `hookline help [command...]`.
func help(root *command, words []string, stdout, stderr io.Writer) int {
	cmd := root
	for _, w := range words {
		next := cmd.sub(w)
		if next == nil {
			return usage(stderr, usagef(cmd, "unknown command %q", w))
		}
		cmd = next
	}
	printHelp(stdout, cmd, (&invocation{cmd: cmd}).flagSet())
	return exitOK
}

// printHelp prints cmd's usage, what it does, its subcommands and flags: its own, then the global ones
// (in full for the top level, by name elsewhere).
func printHelp(w io.Writer, cmd *command, fs *flag.FlagSet) {
	switch {
	case cmd.name == "":
		fmt.Fprint(w, "hookline: Hookline's command line.\n\nusage: hookline <command> [arguments] [flags]\n")
	case len(cmd.subs) == 0:
		fmt.Fprintf(w, "usage: %s\n", cmd.usageLine())
	default:
		fmt.Fprintf(w, "usage: hookline %s <command> [arguments] [flags]\n", cmd.name)
	}
	if len(cmd.subs) > 0 {
		fmt.Fprintln(w, "\ncommands:")
		for _, s := range cmd.subs {
			synopsis := s.synopsis()
			if len(s.subs) == 0 && len(s.name)+len(s.args) < 28 && s.args != "" {
				synopsis += " " + s.args
			}
			fmt.Fprintf(w, "  %-28s %s\n", synopsis, s.short)
		}
	}
	if cmd.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(cmd.long))
	} else if cmd.short != "" && len(cmd.subs) == 0 {
		fmt.Fprintf(w, "\n%s.\n", strings.ToUpper(cmd.short[:1])+cmd.short[1:])
	}
	global := map[string]bool{}
	gfs := flag.NewFlagSet("", flag.ContinueOnError)
	(&globals{}).register(gfs)
	gfs.VisitAll(func(f *flag.Flag) { global[f.Name] = true })
	var own, every []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if global[f.Name] {
			every = append(every, f)
		} else {
			own = append(own, f)
		}
	})
	printFlags := func(flags []*flag.Flag) {
		for _, f := range flags {
			kind, text := flag.UnquoteUsage(f)
			name := "--" + f.Name
			if kind != "" {
				name += " " + kind
			}
			fmt.Fprintf(w, "  %-24s %s\n", name, text)
		}
	}
	if len(own) > 0 {
		fmt.Fprintln(w, "\nflags:")
		printFlags(own)
	}
	if cmd.name == "" {
		fmt.Fprintln(w, "\nflags of every command:")
		printFlags(every)
		fmt.Fprintln(w, "\nFlags may come before or after the arguments. 'hookline <command> --help' says more of each.")
		fmt.Fprintln(w, "Exit status: 0 on success, 1 on an API, network or file error, 2 on bad usage.")
		return
	}
	fmt.Fprintln(w, "\nand those of every command: --url, --token, --tenant, --json ('hookline --help').")
}

// synopsis is how a command list names a command: its words after "hookline" and its arguments, a
// parent with its subcommands' words.
func (c *command) synopsis() string {
	if len(c.subs) == 0 {
		return c.name
	}
	words := make([]string, len(c.subs))
	for i, s := range c.subs {
		words[i] = s.word()
	}
	return c.name + " " + strings.Join(words, "|")
}

// client is the SDK's client of the configured server, made on first use.
func (in *invocation) client() (*client.Client, error) {
	if in.c != nil {
		return in.c, nil
	}
	url, token := in.g.url, in.g.token
	if url == "" {
		url = in.getenv("HOOKLINE_URL")
	}
	if token == "" {
		token = in.getenv("HOOKLINE_TOKEN")
	}
	if url == "" {
		return nil, usagef(in.cmd, "no server: set HOOKLINE_URL or give --url (the server's base URL, e.g. https://hooks.example.com)")
	}
	if strings.TrimSpace(token) == "" {
		return nil, usagef(in.cmd, "no token: set HOOKLINE_TOKEN or give --token (an API token or the admin token)")
	}
	c, err := client.New(url, token, client.WithUserAgent("hookline-cli/"+buildVersion()))
	if err != nil {
		return nil, usagef(in.cmd, "%s", strings.TrimPrefix(err.Error(), "client: "))
	}
	in.c = c
	return c, nil
}

// tenant is the tenant a tenant command works in: --tenant, else the token's own (GET /me). An admin
// token reaches every tenant, so it must say which.
func (in *invocation) tenant(ctx context.Context) (*client.Client, string, error) {
	c, err := in.client()
	if err != nil {
		return nil, "", err
	}
	if in.g.tenant != "" {
		return c, in.g.tenant, nil
	}
	me, err := c.Me(ctx)
	if err != nil {
		return nil, "", err
	}
	if me.TenantID == nil {
		return nil, "", usagef(in.cmd, "this is an admin token, which reaches every tenant: say which with --tenant <id>")
	}
	return c, *me.TenantID, nil
}

// wantArgs checks the command got exactly the n positional arguments it takes (named in what).
func (in *invocation) wantArgs(what ...string) error {
	switch {
	case len(in.args) < len(what):
		return usagef(in.cmd, "%s is missing", what[len(in.args)])
	case len(in.args) > len(what):
		return usagef(in.cmd, "unexpected argument %q", in.args[len(what)])
	}
	return nil
}

// buildVersion is the stamped version, else the module version the toolchain recorded.
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// versionLine is what `hookline version` prints, in the shape of `server version`'s.
func versionLine() string {
	rev, modified := commit, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if rev == "" {
					rev = s.Value
				}
			case "vcs.modified":
				if s.Value == "true" && commit == "" {
					modified = " (modified)"
				}
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("hookline %s commit %s%s %s %s/%s", buildVersion(), rev, modified, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func runVersion(_ context.Context, in *invocation) error {
	if err := in.wantArgs(); err != nil {
		return err
	}
	fmt.Fprintln(in.stdout, versionLine())
	return nil
}
