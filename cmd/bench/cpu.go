package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Throughput on a shared 2-core machine moves with whatever else runs; CPU time spent per delivery moves
// much less. cpuUse reads it from /proc for the three parties of a phase: the server processes, the
// database's backends (every session connected to the phase's database; the project-managed or any local
// PostgreSQL), and the harness itself (its receiver, publishers and, in the ceiling, its SQL client).
// Backends that end between two readings take their time with them, so the database figure is a floor;
// the engine and the ceiling both keep their connections for the whole phase.
type cpuUse struct {
	server, database, harness float64 // seconds
	ok                        bool
}

// clockTicks is USER_HZ: utime and stime in /proc/PID/stat are counted in these (100 on Linux).
const clockTicks = 100

func processCPU(pid int) (float64, bool) {
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

// readCPU takes one reading for servers and db's backends.
func readCPU(ctx context.Context, db *database, servers ...*server) cpuUse {
	var c cpuUse
	c.ok = true
	for _, s := range servers {
		t, ok := processCPU(s.cmd.Process.Pid)
		c.server += t
		c.ok = c.ok && ok
	}
	t, ok := processCPU(os.Getpid())
	c.harness, c.ok = t, c.ok && ok
	rows, err := db.pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	if err != nil {
		return cpuUse{}
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return cpuUse{}
		}
		if t, ok := processCPU(pid); ok {
			c.database += t
			seen++
		}
	}
	if rows.Err() != nil || seen == 0 { // a database on another machine: its processes are not ours to read
		return cpuUse{}
	}
	return c
}

// perDelivery is the CPU each party spent per delivery between two readings, in microseconds.
func (c cpuUse) perDelivery(after cpuUse, n int) (server, database, harness float64, ok bool) {
	if !c.ok || !after.ok || n == 0 {
		return 0, 0, 0, false
	}
	us := func(a, b float64) float64 { return (b - a) * 1e6 / float64(n) }
	return us(c.server, after.server), us(c.database, after.database), us(c.harness, after.harness), true
}

// addCPU records a phase's CPU per delivery in the results.
func (b *bench) addCPU(phase, what string, before, after cpuUse, n int) {
	s, d, h, ok := before.perDelivery(after, n)
	if !ok {
		return
	}
	b.res.add(phase, what+" CPU per delivery: database", d, "µs", "PostgreSQL backends of the phase's database")
	if s > 0 {
		b.res.add(phase, what+" CPU per delivery: server", s, "µs", "")
	}
	b.res.add(phase, what+" CPU per delivery: harness", h, "µs", "receiver (and, in the ceiling, the SQL client)")
	fmt.Printf("%s %s: CPU per delivery: database %.0f µs, server %.0f µs, harness %.0f µs\n", phase, what, d, s, h)
}
