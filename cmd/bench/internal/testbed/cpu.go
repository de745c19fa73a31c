package testbed

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Throughput on a shared 2-core machine moves with whatever else runs; CPU time spent per delivery moves
// much less. CPUUse reads it from /proc for the three parties of a phase: the server processes, the
// database's backends (every session connected to the phase's database; the project-managed or any local
// PostgreSQL), and the harness itself (its receiver, publishers and, in the ceiling, its SQL client).
// Backends that end between two readings take their time with them, so the database figure is a floor;
// the engine and the ceiling both keep their connections for the whole phase.
type CPUUse struct {
	Server, Database, Harness float64 // seconds
	OK                        bool
}

// clockTicks is USER_HZ: utime and stime in /proc/PID/stat are counted in these (100 on Linux).
const clockTicks = 100

// ProcessCPU is the CPU time, user and system, a process has spent, in seconds; false when it cannot be read.
func ProcessCPU(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseFloat(f[11], 64) // utime, field 14
	k, err2 := strconv.ParseFloat(f[12], 64) // stime, field 15
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (u + k) / clockTicks, true
}

// ReadCPU takes one reading for servers and db's backends.
func ReadCPU(ctx context.Context, db *Database, servers ...*Server) CPUUse {
	var c CPUUse
	c.OK = true
	for _, s := range servers {
		t, ok := ProcessCPU(s.cmd.Process.Pid)
		c.Server += t
		c.OK = c.OK && ok
	}
	t, ok := ProcessCPU(os.Getpid())
	c.Harness, c.OK = t, c.OK && ok
	rows, err := db.Pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	if err != nil {
		return CPUUse{}
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return CPUUse{}
		}
		if t, ok := ProcessCPU(pid); ok {
			c.Database += t
			seen++
		}
	}
	if rows.Err() != nil || seen == 0 { // a database on another machine: its processes are not ours to read
		return CPUUse{}
	}
	return c
}

// PerDelivery is the CPU each party spent per delivery between two readings, in microseconds.
func (c CPUUse) PerDelivery(after CPUUse, n int) (Server, Database, harness float64, ok bool) {
	if !c.OK || !after.OK || n == 0 {
		return 0, 0, 0, false
	}
	us := func(a, b float64) float64 { return (b - a) * 1e6 / float64(n) }
	return us(c.Server, after.Server), us(c.Database, after.Database), us(c.Harness, after.Harness), true
}
