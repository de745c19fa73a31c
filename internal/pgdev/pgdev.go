// Package pgdev runs a project-managed local PostgreSQL cluster for
// development and tests.
//
// Layout, for a dir such as <repo>/.data/postgres:
//
//	<dir>/                the cluster's data directory (PGDATA)
//	<dir>/pgdev.conf      our settings (port, listen address, dev tuning), included from postgresql.conf
//	<dir>/server.log      the server log (pg_ctl -l)
//	<dir>.lock            flock(2) lock file serializing Ensure/Stop across processes
//
// The server listens on 127.0.0.1 only, on a port picked once when the
// cluster is created (and re-picked only if that port is later taken by
// something else while our server is down). Unix sockets are disabled, so
// socket path length limits and socket directory permissions never matter.
// Authentication is "trust" for local and 127.0.0.1 connections; the
// superuser is "hookline". Durability is traded for speed (fsync=off): this
// cluster is for development and tests only.
//
// Running as root: PostgreSQL refuses to run as root. When the effective uid
// is 0, initdb and pg_ctl are run with the credentials of the "postgres"
// system user (created by Debian's postgresql package) through
// exec.Cmd.SysProcAttr.Credential, the data directory is chown'ed to that
// user, and any ancestor directory of dir that user could not traverse gets
// the search bit for others (chmod o+x; never read permission), which is
// logged.
package pgdev

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// Superuser is the cluster's superuser role (trust authentication).
	Superuser = "hookline"
	// Database is the database Ensure creates and returns a URL for.
	Database = "hookline"

	confFile     = "pgdev.conf"
	logFile      = "server.log"
	startTimeout = 60 * time.Second
)

// libDir holds Debian's versioned PostgreSQL installs (a variable for tests).
var libDir = "/usr/lib/postgresql"

// ErrNoPostgres is wrapped by the error Ensure returns when no PostgreSQL
// server binaries can be found.
var ErrNoPostgres = errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in /usr/lib/postgresql/*/bin or PATH; install the Debian package: apt-get install postgresql")

// Ensure makes sure the project's PostgreSQL cluster with data directory dir
// exists and runs, and returns a URL to its database "hookline" (created if
// missing). It is idempotent and safe to call concurrently from many
// processes and goroutines. The server keeps running after Ensure returns;
// see Stop.
func Ensure(ctx context.Context, dir string, log *slog.Logger) (string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("pgdev: %w", err)
	}
	unlock, err := lock(ctx, dir)
	if err != nil {
		return "", err
	}
	defer unlock()

	bin, err := findBin(dir)
	if err != nil {
		return "", err
	}
	run, err := newRunner(bin)
	if err != nil {
		return "", err
	}

	if !initialized(dir) {
		if err := initCluster(ctx, run, dir, log); err != nil {
			return "", err
		}
	}
	port, err := readPort(dir)
	if err != nil {
		return "", err
	}

	running, err := run.status(ctx, dir)
	if err != nil {
		return "", err
	}
	if !running {
		if !portFree(port) {
			newPort, err := freePort()
			if err != nil {
				return "", err
			}
			log.Warn("pgdev: configured port is in use by another program; switching port", "dir", dir, "old_port", port, "new_port", newPort)
			port = newPort
			if err := writeConf(dir, port, run.cred); err != nil {
				return "", err
			}
		}
		log.Info("pgdev: starting PostgreSQL", "dir", dir, "port", port, "bin", bin, "log", filepath.Join(dir, logFile))
		if err := run.start(ctx, dir); err != nil {
			return "", err
		}
	} else {
		log.Debug("pgdev: PostgreSQL already running", "dir", dir, "port", port)
	}

	if err := ensureDatabase(ctx, dir, port); err != nil {
		return "", err
	}
	return URL(port, Database), nil
}

// Stop stops the cluster in dir (pg_ctl stop -m fast). Stopping a cluster that
// is not running, or that was never created, is not an error.
func Stop(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if !initialized(dir) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*startTimeout)
	defer cancel()
	unlock, err := lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	bin, err := findBin(dir)
	if err != nil {
		return err
	}
	run, err := newRunner(bin)
	if err != nil {
		return err
	}
	running, err := run.status(ctx, dir)
	if err != nil || !running {
		return err
	}
	_, err = run.cmd(ctx, "pg_ctl", "stop", "-D", dir, "-m", "fast", "-w", "-t", strconv.Itoa(int(startTimeout.Seconds())))
	return err
}

// URL returns the URL of database db in a cluster listening on 127.0.0.1:port.
func URL(port int, db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// FindRepoRoot walks up from start to the directory holding the go.mod of
// module github.com/hookline/hookline.
func FindRepoRoot(start string) (string, error) {
	d, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) >= 2 && f[0] == "module" && strings.Trim(f[1], `"`) == "github.com/hookline/hookline" {
					return d, nil
				}
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("pgdev: no go.mod of module github.com/hookline/hookline in %s or its parents", start)
		}
		d = parent
	}
}

// lock takes an exclusive flock on <dir>.lock, polling so ctx can cancel.
func lock(ctx context.Context, dir string) (func(), error) {
	path := dir + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgdev: lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("pgdev: flock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("pgdev: waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func initialized(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "PG_VERSION"))
	return err == nil
}

// findBin returns the directory holding initdb, pg_ctl and postgres: the one
// of the cluster's major version if dir is already a cluster, else the newest
// /usr/lib/postgresql/*/bin, else PATH.
func findBin(dir string) (string, error) {
	has := func(d string) bool {
		for _, n := range []string{"initdb", "pg_ctl", "postgres"} {
			if st, err := os.Stat(filepath.Join(d, n)); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if v, err := os.ReadFile(filepath.Join(dir, "PG_VERSION")); err == nil {
		if d := filepath.Join(libDir, strings.TrimSpace(string(v)), "bin"); has(d) {
			return d, nil
		}
	}
	cands, _ := filepath.Glob(filepath.Join(libDir, "*", "bin"))
	sort.Slice(cands, func(i, j int) bool { // newest first
		return versionLess(filepath.Base(filepath.Dir(cands[j])), filepath.Base(filepath.Dir(cands[i])))
	})
	for _, d := range cands {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		// Resolve symlinks: pg_ctl finds postgres next to its real path.
		if r, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(r)) {
			return filepath.Dir(r), nil
		}
		if has(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	return "", fmt.Errorf("pgdev: %w", ErrNoPostgres)
}

// versionLess compares dotted numeric versions ("9.6" < "15" < "17").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return a < b
}

// runner runs PostgreSQL tools, as the postgres system user when we are root.
type runner struct {
	bin  string
	cred *syscall.Credential // nil: run as ourselves
}

func newRunner(bin string) (*runner, error) {
	r := &runner{bin: bin}
	if os.Geteuid() != 0 {
		return r, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgdev: running as root, PostgreSQL must run as an unprivileged user, but the 'postgres' system user is missing (%v); install the Debian package postgresql (apt-get install postgresql) or run as a normal user", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgdev: bad uid/gid for user postgres: %q/%q", u.Uid, u.Gid)
	}
	r.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	return r, nil
}

// cmd runs a tool and returns its combined output; the error includes it.
func (r *runner) cmd(ctx context.Context, tool string, args ...string) ([]byte, error) {
	c := exec.CommandContext(ctx, filepath.Join(r.bin, tool), args...)
	c.Dir = "/"
	// A clean environment: no PGDATA/PGPORT/locale surprises from the caller.
	c.Env = []string{"PATH=" + r.bin + ":/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "LANG=C"}
	if tz, ok := os.LookupEnv("TZ"); ok {
		c.Env = append(c.Env, "TZ="+tz)
	}
	// Own session: a Ctrl-C to the caller's process group must not reach
	// the postmaster that pg_ctl start leaves running.
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: r.cred}
	out, err := c.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("pgdev: %s %s: %w: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// status reports whether pg_ctl sees a live server for dir.
func (r *runner) status(ctx context.Context, dir string) (bool, error) {
	_, err := r.cmd(ctx, "pg_ctl", "status", "-D", dir)
	if err == nil {
		return true, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 { // 3: not running
		return false, nil
	}
	return false, err
}

func (r *runner) start(ctx context.Context, dir string) error {
	_, err := r.cmd(ctx, "pg_ctl", "start", "-D", dir, "-l", filepath.Join(dir, logFile),
		"-w", "-t", strconv.Itoa(int(startTimeout.Seconds())), "-s")
	if err != nil {
		return fmt.Errorf("%w (see %s)", err, filepath.Join(dir, logFile))
	}
	return nil
}

// initCluster runs initdb in a sibling temporary directory, writes our
// configuration, and renames it to dir, so a half-made cluster never sits at dir.
func initCluster(ctx context.Context, run *runner, dir string, log *slog.Logger) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("pgdev: %s exists, is not empty and is not a PostgreSQL data directory (no PG_VERSION); move it away", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pgdev: %w", err)
	}
	if run.cred != nil {
		if err := makeTraversable(filepath.Dir(dir), run.cred, log); err != nil {
			return err
		}
	}
	tmp := fmt.Sprintf("%s.init-%d", dir, os.Getpid())
	_ = os.RemoveAll(tmp)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	if err := chown(tmp, run.cred); err != nil {
		return err
	}
	log.Info("pgdev: creating PostgreSQL cluster", "dir", dir, "bin", run.bin)
	if _, err := run.cmd(ctx, "initdb", "-D", tmp, "-U", Superuser, "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := writeConf(tmp, port, run.cred); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(tmp, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# Added by hookline internal/pgdev.\ninclude '%s'\n", confFile)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	_ = os.Remove(dir) // an empty dir, if any
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	log.Info("pgdev: PostgreSQL cluster created", "dir", dir, "port", port)
	return nil
}

func writeConf(dir string, port int, cred *syscall.Credential) error {
	conf := fmt.Sprintf(`# Written by hookline internal/pgdev; the port is rewritten if it is ever taken.
# Development/test cluster: durability is traded for speed.
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = ''
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
`, port)
	path := filepath.Join(dir, confFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	if err := chown(tmp, cred); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	return nil
}

func readPort(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, confFile))
	if err != nil {
		return 0, fmt.Errorf("pgdev: %s is not a cluster made by pgdev: %w", dir, err)
	}
	port := 0
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "port" {
			if p, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), "'")); err == nil {
				port = p
			}
		}
	}
	if port <= 0 {
		return 0, fmt.Errorf("pgdev: no port in %s", filepath.Join(dir, confFile))
	}
	return port, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgdev: picking a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func chown(path string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	return nil
}

// makeTraversable gives the search (x) bit to others on every ancestor of
// dir (inclusive) that the user in cred could not otherwise traverse.
func makeTraversable(dir string, cred *syscall.Credential, log *slog.Logger) error {
	for d := dir; ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			return fmt.Errorf("pgdev: %w", err)
		}
		mode := st.Mode & 0o777
		ok := false
		switch {
		case st.Uid == cred.Uid:
			ok = mode&0o100 != 0
		case st.Gid == cred.Gid:
			ok = mode&0o010 != 0
		default:
			ok = mode&0o001 != 0
		}
		if !ok {
			log.Warn("pgdev: adding search permission for others so the postgres user can reach the data directory", "path", d)
			if err := os.Chmod(d, fs.FileMode(mode|0o001)); err != nil {
				return fmt.Errorf("pgdev: %w", err)
			}
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// ensureDatabase waits until the server accepts connections, checks that it
// is the server of dir, and creates the database if missing.
func ensureDatabase(ctx context.Context, dir string, port int) error {
	deadline := time.Now().Add(startTimeout)
	var conn *pgx.Conn
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := pgx.Connect(cctx, URL(port, "postgres"))
		cancel()
		if err == nil {
			conn = c
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("pgdev: connecting to the server of %s on port %d: %w", dir, port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer conn.Close(context.Background())

	var dataDir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dataDir); err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	if !sameDir(dataDir, dir) {
		return fmt.Errorf("pgdev: the server on 127.0.0.1:%d serves %s, not %s", port, dataDir, dir)
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", Database).Scan(&exists); err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	if !exists {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{Database}.Sanitize())
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42P04") { // duplicate_database
			return fmt.Errorf("pgdev: creating database %s: %w", Database, err)
		}
	}
	return nil
}

func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
