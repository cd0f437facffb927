package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/nexmark"
	"github.com/streamdb/streamdb/sql"
)

// benchNexmark runs the Nexmark suite (nexmark/queries): for each query,
// on a fresh in-process database, it creates the person, auction and bid
// sources over --events events of the nexmark connector, the query as a
// materialized view, and runs CHECKPOINT, which returns once the view's
// job has read every event. It prints events/s, events/s per core (events
// over the process's CPU time), the view's rows, the peak RSS during the
// query (resetPeakRSS) and the data directory's size. With --server it
// does the same over the wire against a running server, one query at a
// time (--queries), where the server's CPU time is not visible.
//
//	streamdb bench nexmark [--events N] [--queries q0,q1,...] [--checkpoint-interval 1s] [--split 1] [--server URL] [--cpuprofile FILE]
//
// --cpuprofile covers what events/s per core measures, the view and its
// CHECKPOINT, not the setup, the count of the view's rows or a previous
// query's leftover compactions; with several queries each gets its own
// file (FILE-q0, FILE-q1, ...).
func benchNexmark(args []string) error {
	fl := flag.NewFlagSet("bench nexmark", flag.ExitOnError)
	events := fl.Int64("events", 1_000_000, "events to generate (persons, auctions and bids together)")
	queries := fl.String("queries", "", "comma-separated queries to run (default: all of nexmark/queries)")
	interval := fl.String("checkpoint-interval", "1s", "checkpoint.interval")
	splits := fl.Int("split", 1, "splits of each source (nexmark.split)")
	par := fl.Int("parallelism", 0, "aggregate instances per job (0: cores)")
	server := fl.String("server", "", "run over the wire against this server (a postgres:// URL) instead of in-process")
	cpuprofile := fl.String("cpuprofile", "", "write a CPU profile of each query's measured part (its view and CHECKPOINT) to this file (with several queries: this file + '-' + the query's name)")
	watermark := fl.String("watermark", "", "declare WATERMARK FOR date_time AS date_time - INTERVAL '<this>' on the sources (e.g. '4 seconds'), so windows close")
	cacheMB := fl.Int64("state-cache-mb", 1024, "each job's operator state cache, as the server's --state-cache-mb (0: unbounded)")
	memLimit := fl.String("memory-limit", "", "the process's memory limit, as the server's --memory-limit (sizes the state cache unless --state-cache-mb is given)")
	memprofile := fl.String("memprofile", "", "write a heap profile of each query, after its CHECKPOINT and a GC, to this prefix + the query's name")
	fl.Parse(args)
	split, err := memoryLimitConfig(*memLimit, map[string]string{})
	if err != nil {
		return err
	}
	cacheGiven := false
	fl.Visit(func(f *flag.Flag) { cacheGiven = cacheGiven || f.Name == "state-cache-mb" })
	if split.Limit > 0 { // sql.Open sets Go's soft limit and admits work against it
		if !cacheGiven {
			*cacheMB = split.StateCache >> 20
		}
	}
	cfg := nexmarkConfig{par: *par, cache: *cacheMB << 20, mem: split, memprofile: *memprofile, cpuprofile: *cpuprofile}
	var qs []nexmark.Query
	for _, q := range nexmark.Queries() {
		if *queries == "" || containsName(strings.Split(*queries, ","), q.Name) {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return fmt.Errorf("--queries %q names no query of nexmark/queries", *queries)
	}
	cfg.profileEach = len(qs) > 1
	fmt.Printf("streamdb bench nexmark: %d events, %d split(s), checkpoint.interval %s, GOMAXPROCS %d, state cache %d MB, memory limit %s\n",
		*events, *splits, *interval, runtime.GOMAXPROCS(0), *cacheMB, orNone(*memLimit))
	fmt.Printf("%-5s %12s %14s %10s %9s %10s %8s %10s\n", "query", "events/s", "events/s/core", "view rows", "seconds", "peak RSS", "state", "live heap")
	ddl := append([]string{"SET checkpoint.interval = '" + *interval + "'"}, nexmark.SourceDDLWatermark(*events, 1, *splits, *watermark)...)
	for _, q := range qs {
		if *server != "" {
			err = nexmarkOverWire(*server, q, ddl, *events)
		} else {
			err = nexmarkInProcess(q, ddl, *events, cfg)
		}
		if err != nil {
			fmt.Printf("%-5s not supported: %v\n", q.Name, err)
		}
	}
	return nil
}

func containsName(names []string, n string) bool {
	for _, m := range names {
		if strings.TrimSpace(m) == n {
			return true
		}
	}
	return false
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dirSize is the disk space of the files under dir, each file once: the
// retained checkpoints hard-link the database's tables, and counting every
// link counted a table once per checkpoint that keeps it.
func dirSize(dir string) int64 {
	var n int64
	seen := map[uint64]bool{}
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					if seen[st.Ino] {
						return nil
					}
					seen[st.Ino] = true
				}
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// nexmarkConfig is how the in-process engine of bench nexmark is set up.
type nexmarkConfig struct {
	par         int
	cache       int64 // state cache per job, bytes
	mem         plan.MemorySplit
	memprofile  string
	cpuprofile  string // CPU profile of the measured part of each query
	profileEach bool   // one profile file a query: cpuprofile-qN
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// liveHeapMB collects garbage and returns the live heap in MB; with a
// profile prefix it also writes the heap profile of the query there.
func liveHeapMB(profile string) float64 {
	runtime.GC()
	if profile != "" {
		if f, err := os.Create(profile); err == nil {
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
	return float64(plan.LiveHeap()) / (1 << 20)
}

func nexmarkInProcess(q nexmark.Query, ddl []string, events int64, nc nexmarkConfig) error {
	dir, err := os.MkdirTemp("", "streamdb-nexmark-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	eng, err := sql.Open(sql.Config{DataDir: dir, Parallelism: nc.par, StateCacheBytes: nc.cache, Memory: nc.mem})
	if err != nil {
		return err
	}
	defer eng.Close()
	s := eng.NewSession("streamdb", "streamdb")
	ctx := context.Background()
	run := func(text string) (*sql.Result, error) {
		stmts, err := s.PrepareAll(ctx, text)
		if err != nil {
			return nil, err
		}
		var res *sql.Result
		for _, st := range stmts {
			if res, err = s.Execute(ctx, st, nil); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	for _, d := range ddl {
		if _, err := run(d); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	noteResetPeakRSS()
	if nc.cpuprofile != "" {
		path := nc.cpuprofile
		if nc.profileEach {
			path += "-" + q.Name
		}
		stop, err := startProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	cpu0, start := cpuTime(), time.Now()
	if _, err := run("CREATE MATERIALIZED VIEW " + q.Name + " AS " + q.SQL); err != nil {
		return err
	}
	if _, err := run("CHECKPOINT"); err != nil {
		return err
	}
	wall, cpu := time.Since(start), cpuTime()-cpu0
	if nc.cpuprofile != "" {
		pprof.StopCPUProfile() // the measured part only (the deferred stop closes the file)
	}
	rows, err := scalarAny(ctx, run, "SELECT count(*) FROM "+q.Name)
	if err != nil {
		return err
	}
	peak := peakRSSMB()
	prof := ""
	if nc.memprofile != "" {
		prof = nc.memprofile + q.Name
	}
	fmt.Printf("%-5s %12.0f %14.0f %10d %9.2f %8.0fMB %6.0fMB %8.0fMB\n", q.Name, float64(events)/wall.Seconds(),
		float64(events)/cpu.Seconds(), rows, wall.Seconds(), peak, float64(dirSize(dir))/(1<<20), liveHeapMB(prof))
	return nil
}

// nexmarkOverWire runs one query against a server; it drops what it
// creates, so the server can run the next.
func nexmarkOverWire(url string, q nexmark.Query, ddl []string, events int64) error {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	c.Exec(ctx, "DROP MATERIALIZED VIEW IF EXISTS "+q.Name)
	for _, t := range nexmark.Tables {
		c.Exec(ctx, "DROP SOURCE IF EXISTS "+t+" CASCADE")
	}
	for _, d := range ddl {
		if _, err := c.Exec(ctx, d); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	start := time.Now()
	if _, err := c.Exec(ctx, "CREATE MATERIALIZED VIEW "+q.Name+" AS "+q.SQL); err != nil {
		return err
	}
	if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
		return err
	}
	wall := time.Since(start)
	var rows int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM "+q.Name).Scan(&rows); err != nil {
		return err
	}
	fmt.Printf("%-5s %12.0f %14s %10d %9.2f %10s %8s\n", q.Name, float64(events)/wall.Seconds(), "(server)", rows, wall.Seconds(), "-", "-")
	c.Exec(ctx, "DROP MATERIALIZED VIEW "+q.Name)
	for _, t := range nexmark.Tables {
		c.Exec(ctx, "DROP SOURCE "+t)
	}
	return nil
}
