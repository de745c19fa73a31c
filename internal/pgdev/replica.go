package pgdev

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replicated clusters: a primary and streaming standbys made with pg_basebackup, for tests of what the
// server does when the primary dies and a standby is promoted. Each cluster is a data directory laid out
// like Ensure's (pgdev.conf, server.log) with one more included file, replication.conf, whose settings
// come after pgdev.conf's and so win.

const replicationConfFile = "replication.conf"

// Cluster is one running project-managed cluster of a replicated set.
type Cluster struct {
	// Dir is the data directory.
	Dir string
	// Port is the port it listens on, on 127.0.0.1.
	Port int
	run  *runner
}

// StartPrimary creates a cluster in dir (which must not exist or be empty), set up to stream its WAL to
// standbys, starts it and creates the database "hookline". Unlike Ensure's cluster, synchronous_commit
// is on, so once a synchronous standby is added (StartStandby) a commit returns only when that standby
// has its WAL. (fsync stays off: the tests kill PostgreSQL's processes, not the machine, and the page
// cache survives that.) log may be nil.
func StartPrimary(ctx context.Context, dir string, log *slog.Logger) (*Cluster, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	bin, err := findBin(dir)
	if err != nil {
		return nil, err
	}
	run, err := newRunner(bin)
	if err != nil {
		return nil, err
	}
	if err := initCluster(ctx, run, dir, log); err != nil {
		return nil, err
	}
	if err := includeConf(dir, replicationConfFile, primaryConf(""), run.cred); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, run: run}
	if c.Port, err = readPort(dir); err != nil {
		return nil, err
	}
	if err := run.start(ctx, dir); err != nil {
		return nil, err
	}
	if err := ensureDatabase(ctx, dir, c.Port); err != nil {
		return nil, err
	}
	return c, nil
}

// primaryConf is a primary's replication.conf; synchronous names the standby every commit waits for.
func primaryConf(synchronous string) string {
	return fmt.Sprintf(`# Written by hookline internal/pgdev: a primary streaming to standbys.
wal_level = replica
max_wal_senders = 10
wal_keep_size = '256MB'
synchronous_commit = on
synchronous_standby_names = '%s'
`, synchronous)
}

// StartStandby copies the running primary with pg_basebackup into dir (which must not exist or be
// empty) and starts it as a hot standby streaming from the primary under the application_name name. It
// returns once the primary sees it streaming. With synchronous, the primary then lists it in
// synchronous_standby_names: from then on a commit the client saw succeed is on the standby too, and
// while the standby is away commits wait for it.
//
// The standby is set up not to wait for any standby of its own once promoted
// (synchronous_standby_names is empty): after a failover it is the only cluster left.
func (p *Cluster) StartStandby(ctx context.Context, dir, name string, synchronous bool) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if p.run.cred != nil {
		if err := makeTraversable(filepath.Dir(dir), p.run.cred, slog.New(slog.DiscardHandler)); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pgdev: %w", err)
	}
	if err := chown(dir, p.run.cred); err != nil {
		return nil, err
	}
	if _, err := p.run.cmd(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", Superuser,
		"-D", dir, "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		return nil, err
	}
	// The copy has the primary's server.log and settings: a log of its own, and a port of its own.
	_ = os.Remove(filepath.Join(dir, logFile))
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := writeConf(dir, port, p.run.cred); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`# Written by hookline internal/pgdev: a hot standby of the cluster on port %d.
wal_level = replica
max_wal_senders = 10
wal_keep_size = '256MB'
synchronous_commit = on
synchronous_standby_names = ''
hot_standby = on
primary_conninfo = 'host=127.0.0.1 port=%d user=%s application_name=%s'
`, p.Port, p.Port, Superuser, name)
	if err := writeFile(filepath.Join(dir, replicationConfFile), conf, p.run.cred); err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dir, "standby.signal"), "", p.run.cred); err != nil {
		return nil, err
	}
	s := &Cluster{Dir: dir, Port: port, run: p.run}
	if err := p.run.start(ctx, dir); err != nil {
		return nil, err
	}
	if err := p.waitStandby(ctx, name, "async"); err != nil {
		return nil, err
	}
	if synchronous {
		if err := writeFile(filepath.Join(p.Dir, replicationConfFile), primaryConf(name), p.run.cred); err != nil {
			return nil, err
		}
		if _, err := p.run.cmd(ctx, "pg_ctl", "reload", "-D", p.Dir); err != nil {
			return nil, err
		}
		if err := p.waitStandby(ctx, name, "sync"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// waitStandby waits until the standby named name streams from p with this sync_state (async, sync).
func (p *Cluster) waitStandby(ctx context.Context, name, syncState string) error {
	conn, err := pgx.Connect(ctx, p.URL(Database))
	if err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(startTimeout)
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication
			WHERE application_name = $1 AND state = 'streaming' AND sync_state = $2`, name, syncState).Scan(&n)
		if err != nil {
			return fmt.Errorf("pgdev: %w", err)
		}
		if n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgdev: standby %q is not streaming (%s) from port %d after %s", name, syncState, p.Port, startTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// URL is the URL of database db on this cluster.
func (c *Cluster) URL(db string) string { return URL(c.Port, db) }

// Kill sends SIGKILL to the postmaster and every process it started at once (pg_ctl start makes the
// postmaster a session and process group leader): a crash of the server's machine, as far as its clients
// can tell. Nothing is shut down cleanly; the sockets are closed by the kernel.
func (c *Cluster) Kill() error {
	pid, err := c.pid()
	if err != nil {
		return err
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("pgdev: kill process group %d: %w", pid, err)
	}
	// Wait until the postmaster is gone, so the port is free and a status check says stopped.
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("pgdev: postmaster %d still alive 10 s after SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// alive says whether process pid runs. A zombie does not: the killed postmaster's parent is whichever
// process adopted it, which may reap it late or never.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: a zombie counts as alive, which only costs time
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, so the state follows the last ')'.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

// pid is the postmaster's process id (the first line of postmaster.pid).
func (c *Cluster) pid() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("pgdev: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pgdev: no pid in %s", filepath.Join(c.Dir, "postmaster.pid"))
	}
	return pid, nil
}

// Promote ends recovery on a standby (pg_ctl promote) and waits until it accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	_, err := c.run.cmd(ctx, "pg_ctl", "promote", "-D", c.Dir, "-w", "-t", strconv.Itoa(int(startTimeout.Seconds())))
	return err
}

// Stop stops the cluster at once (pg_ctl stop -m immediate); a cluster already stopped or killed is not an
// error.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	running, err := c.run.status(ctx, c.Dir)
	if err != nil || !running {
		return err
	}
	_, err = c.run.cmd(ctx, "pg_ctl", "stop", "-D", c.Dir, "-m", "immediate", "-w")
	return err
}

// MultiHostURL is a libpq-style URL of database db naming every cluster's host, in order, with
// target_session_attrs=read-write: a client connects to the first that accepts writes.
func MultiHostURL(db string, clusters ...*Cluster) (string, error) {
	if len(clusters) == 0 {
		return "", errors.New("pgdev: no clusters")
	}
	hosts := make([]string, len(clusters))
	for i, c := range clusters {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(c.Port)
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&target_session_attrs=read-write", Superuser, strings.Join(hosts, ","), db), nil
}

// includeConf writes name in dir and includes it at the end of postgresql.conf.
func includeConf(dir, name, conf string, cred *syscall.Credential) error {
	if err := writeFile(filepath.Join(dir, name), conf, cred); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	_, err = fmt.Fprintf(f, "include '%s'\n", name)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	return nil
}

func writeFile(path, text string, cred *syscall.Credential) error {
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("pgdev: %w", err)
	}
	return chown(path, cred)
}
