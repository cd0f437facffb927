package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streamdb/streamdb/nexmark"
	"github.com/streamdb/streamdb/sql"
	"github.com/streamdb/streamdb/types"
)

// benchBackends compares the state backends (issue 15): for each of
// --backends it runs, on a fresh in-process database with 1 s periodic
// checkpoints, the GROUP BY view benchmark (COPY --rows rows over --keys
// keys into `SELECT k, count(*), sum(v) FROM t GROUP BY k`, then --steady
// CHECKPOINTs after 1000-row COPYs, then 5 CHECKPOINTs with nothing new) and the Nexmark queries --queries over
// --events events, and prints each run's time and its checkpoints'
// durations and sizes as SHOW CHECKPOINTS reports them.
//
//	streamdb bench backends [--backends pebble,memory] [--rows N] [--keys K] [--events N] [--queries q4,q5]
func benchBackends(args []string) error {
	fl := flag.NewFlagSet("bench backends", flag.ExitOnError)
	backends := fl.String("backends", "pebble,memory", "state backends to compare")
	rows := fl.Int("rows", 2_000_000, "rows of the GROUP BY run (0: skip it)")
	keys := fl.Int("keys", 100_000, "distinct keys of the GROUP BY run")
	steady := fl.Int("steady", 10, "CHECKPOINTs after 1000-row COPYs once the GROUP BY view is complete")
	events := fl.Int64("events", 1_000_000, "Nexmark events")
	queries := fl.String("queries", "q4,q5", "Nexmark queries ('' to skip)")
	fl.Parse(args)
	fmt.Printf("streamdb bench backends: GOMAXPROCS %d\n", runtime.GOMAXPROCS(0))
	for _, be := range strings.Split(*backends, ",") {
		if *rows > 0 {
			if err := backendGroupBy(be, *rows, *keys, *steady); err != nil {
				return fmt.Errorf("%s groupby: %w", be, err)
			}
		}
		for _, q := range nexmark.Queries() {
			if *queries == "" || !containsName(strings.Split(*queries, ","), q.Name) {
				continue
			}
			if err := backendNexmark(be, q, *events); err != nil {
				fmt.Printf("%-7s %-8s failed: %v\n", be, q.Name, err)
			}
		}
	}
	return nil
}

// benchEngine is a fresh in-process database and a session on it.
type benchEngine struct {
	dir string
	eng *sql.Engine
	run func(string) (*sql.Result, error)
}

func openBenchEngine() (*benchEngine, error) {
	dir, err := os.MkdirTemp("", "streamdb-bench-")
	if err != nil {
		return nil, err
	}
	eng, err := sql.Open(sql.Config{DataDir: dir})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
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
				return nil, fmt.Errorf("%s: %w", text, err)
			}
		}
		return res, nil
	}
	return &benchEngine{dir: dir, eng: eng, run: run}, nil
}

func (b *benchEngine) close() {
	b.eng.Close()
	os.RemoveAll(b.dir)
}

func (b *benchEngine) exec(stmts ...string) error {
	for _, q := range stmts {
		res, err := b.run(q)
		if err != nil {
			return err
		}
		if res != nil && res.Rows != nil {
			res.Rows.Close()
		}
	}
	return nil
}

// copyRows COPYs the text rows that gen writes into table.
func (b *benchEngine) copyRows(table string, gen func(*bytes.Buffer)) error {
	res, err := b.run("COPY " + table + " FROM STDIN")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	gen(&buf)
	if err := res.CopyIn.Write(buf.Bytes()); err != nil {
		return err
	}
	_, err = res.CopyIn.Done()
	return err
}

// ckStats summarizes the completed checkpoints of one trigger.
type ckStats struct {
	n                 int
	p50, max          int64 // duration, ms
	lastSize, maxSize int64 // state_size, bytes
}

func (b *benchEngine) checkpointStats(trigger string) (ckStats, error) {
	var st ckStats
	res, err := b.run(`SELECT duration_ms, state_size FROM streamdb_checkpoints WHERE status = 'COMPLETED' AND "trigger" = '` + trigger + `' ORDER BY id`)
	if err != nil {
		return st, err
	}
	defer res.Rows.Close()
	var durs []int64
	for {
		rec, err := res.Rows.Next(context.Background())
		if err != nil || rec == nil {
			break
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			durs = append(durs, types.DatumAt(rec.Column(0), i, types.TInt64).I)
			st.lastSize = types.DatumAt(rec.Column(1), i, types.TInt64).I
			st.maxSize = max(st.maxSize, st.lastSize)
		}
		rec.Release()
	}
	if st.n = len(durs); st.n > 0 {
		sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
		st.p50, st.max = durs[len(durs)/2], durs[len(durs)-1]
	}
	return st, nil
}

func (b *benchEngine) printCheckpoints(be, what string) error {
	for _, trigger := range []string{"periodic", "manual"} {
		st, err := b.checkpointStats(trigger)
		if err != nil {
			return err
		}
		if st.n > 0 {
			fmt.Printf("%-7s %-8s %-8s checkpoints: %3d, duration p50 %5d ms, max %5d ms; size last %7.1f MB, max %7.1f MB\n",
				be, what, trigger, st.n, st.p50, st.max, float64(st.lastSize)/(1<<20), float64(st.maxSize)/(1<<20))
		}
	}
	return nil
}

func backendGroupBy(be string, rows, keys, steady int) error {
	b, err := openBenchEngine()
	if err != nil {
		return err
	}
	defer b.close()
	if err := b.exec("SET checkpoint.interval = '1s'", "SET state.backend = '"+be+"'",
		"CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k"); err != nil {
		return err
	}
	rss0 := noteResetPeakRSS()
	start := time.Now()
	const batch = 500_000
	for done := 0; done < rows; done += batch {
		n := min(batch, rows-done)
		if err := b.copyRows("t", func(buf *bytes.Buffer) {
			for i := done; i < done+n; i++ {
				buf.WriteString(strconv.Itoa(i % keys))
				buf.WriteByte('\t')
				buf.WriteString(strconv.Itoa(i % 100))
				buf.WriteByte('\n')
			}
		}); err != nil {
			return err
		}
	}
	for {
		if err := b.exec("CHECKPOINT"); err != nil {
			return err
		}
		total, err := scalar(context.Background(), b.run, "SELECT sum(c) FROM v")
		if err != nil {
			return err
		}
		if total == int64(rows) {
			break
		}
	}
	complete := time.Since(start)
	var ds []time.Duration
	for r := 0; r < steady; r++ {
		if err := b.copyRows("t", func(buf *bytes.Buffer) {
			for i := 0; i < 1000; i++ {
				fmt.Fprintf(buf, "%d\t%d\n", (r*7919+i*104729)%keys, i)
			}
		}); err != nil {
			return err
		}
		t0 := time.Now()
		if err := b.exec("CHECKPOINT"); err != nil {
			return err
		}
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	fmt.Printf("%-7s groupby  %d rows, %d keys: view complete in %v (%.0f rows/s); steady CHECKPOINT p50 %v, max %v; peak RSS %.0f MB (%.0f MB at the start)\n",
		be, rows, keys, complete.Round(time.Millisecond), float64(rows)/complete.Seconds(),
		ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), peakRSSMB(), rss0)
	// What the job holds once the view is complete and idle: the live heap
	// and RSS after a collection that returns freed memory to the system,
	// and the job's accounted state (streamdb_jobs.state_bytes).
	// Periodic checkpoints stop first, so no snapshot is being taken.
	if err := b.exec("SET checkpoint.interval = '1h'", "CHECKPOINT"); err != nil {
		return err
	}
	sb, err := scalarAny(context.Background(), b.run, "SELECT state_bytes FROM streamdb_jobs WHERE name = 'v'")
	if err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // a periodic round in flight ends
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("%-7s groupby  idle, after GC: heap in use %.0f MB, RSS %.0f MB, state_bytes %v\n",
		be, float64(ms.HeapInuse)/(1<<20), rssMB(), sb)
	// CHECKPOINTs with nothing new: what a quiet view's checkpoints cost.
	ds = ds[:0]
	for range 5 {
		t0 := time.Now()
		if err := b.exec("CHECKPOINT"); err != nil {
			return err
		}
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	fmt.Printf("%-7s groupby  unchanged CHECKPOINT p50 %v, max %v\n", be, ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	return b.printCheckpoints(be, "groupby")
}

func backendNexmark(be string, q nexmark.Query, events int64) error {
	b, err := openBenchEngine()
	if err != nil {
		return err
	}
	defer b.close()
	ddl := append([]string{"SET checkpoint.interval = '1s'", "SET state.backend = '" + be + "'"}, nexmark.SourceDDL(events, 1, 1)...)
	if err := b.exec(ddl...); err != nil {
		return err
	}
	rss0 := noteResetPeakRSS()
	start := time.Now()
	if err := b.exec("CREATE MATERIALIZED VIEW "+q.Name+" AS "+q.SQL, "CHECKPOINT"); err != nil {
		return err
	}
	wall := time.Since(start)
	n, err := scalarAny(context.Background(), b.run, "SELECT count(*) FROM "+q.Name)
	if err != nil {
		return err
	}
	fmt.Printf("%-7s %-8s %d events in %v: %.0f events/s, %d view rows; peak RSS %.0f MB (%.0f MB at the start)\n",
		be, q.Name, events, wall.Round(time.Millisecond), float64(events)/wall.Seconds(), n, peakRSSMB(), rss0)
	return b.printCheckpoints(be, q.Name)
}

// benchWindow is the event-time boundedness run (issue 12): --events rows
// whose event time advances --step-us per row (10M rows at 1000 µs span
// 2.8 hours of event time) are COPYed into a table with a watermark, under
// a tumbling-window view (`TUMBLE(ev, ts, --window)`, GROUP BY window and
// key) with 1 s checkpoints. Every --sample rows it prints the job's
// committed state entries, its operator state bytes (SHOW JOBS), the view's
// rows and the process's RSS and Go heap: with windows closing, the state
// and memory stay flat while the view grows.
//
//	streamdb bench window [--backend memory] [--events 10000000] [--keys 100] [--step-us 1000] [--window 10s]
func benchWindow(args []string) error {
	fl := flag.NewFlagSet("bench window", flag.ExitOnError)
	be := fl.String("backend", "pebble", "state backend")
	events := fl.Int("events", 10_000_000, "rows")
	keys := fl.Int("keys", 100, "distinct keys")
	step := fl.Int64("step-us", 1000, "event time between consecutive rows, in microseconds")
	window := fl.Int("window", 10, "tumbling window size in seconds")
	batch := fl.Int("batch", 200_000, "rows per COPY")
	sample := fl.Int("sample", 1_000_000, "rows between samples")
	fl.Parse(args)
	b, err := openBenchEngine()
	if err != nil {
		return err
	}
	defer b.close()
	if err := b.exec("SET checkpoint.interval = '1s'", "SET state.backend = '"+*be+"'",
		"CREATE TABLE ev (k BIGINT, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
		fmt.Sprintf("CREATE MATERIALIZED VIEW w AS SELECT window_start, k, count(*) AS n, sum(v) AS s FROM TUMBLE(ev, ts, INTERVAL '%d' SECOND) GROUP BY window_start, k", *window)); err != nil {
		return err
	}
	span := time.Duration(int64(*events) * *step * 1000)
	fmt.Printf("streamdb bench window: backend %s, %d rows, %d keys, event time %v (+%d µs a row), TUMBLE %d s, checkpoint.interval 1s, GOMAXPROCS %d\n",
		*be, *events, *keys, span, *step, *window, runtime.GOMAXPROCS(0))
	fmt.Printf("%10s %8s %12s %12s %10s %9s %9s\n", "rows", "seconds", "state rows", "state bytes", "view rows", "RSS MB", "heap MB")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	start := time.Now()
	samplePoint := func(done int) error {
		if err := b.exec("CHECKPOINT"); err != nil {
			return err
		}
		entries, err := b.eng.StateEntries("w")
		if err != nil {
			return err
		}
		sb, err := scalarAny(context.Background(), b.run, "SELECT state_bytes FROM streamdb_jobs WHERE name = 'w'")
		if err != nil {
			return err
		}
		vr, err := scalarAny(context.Background(), b.run, "SELECT count(*) FROM w")
		if err != nil {
			return err
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Printf("%10d %8.1f %12d %12d %10d %9.0f %9.0f\n", done, time.Since(start).Seconds(), entries, sb, vr,
			rssMB(), float64(ms.HeapInuse)/(1<<20))
		return nil
	}
	next := *sample
	for done := 0; done < *events; done += *batch {
		n := min(*batch, *events-done)
		if err := b.copyRows("ev", func(buf *bytes.Buffer) {
			for i := done; i < done+n; i++ {
				buf.WriteString(strconv.Itoa(i % *keys))
				buf.WriteByte('\t')
				buf.WriteString(strconv.Itoa(i % 100))
				buf.WriteByte('\t')
				buf.Write(time.UnixMicro(base+int64(i)**step).UTC().AppendFormat(nil, "2006-01-02 15:04:05.999999"))
				buf.WriteByte('\n')
			}
		}); err != nil {
			return err
		}
		if done+n >= next || done+n == *events {
			if err := samplePoint(done + n); err != nil {
				return err
			}
			next += *sample
		}
	}
	wall := time.Since(start)
	fmt.Printf("%d rows in %v: %.0f rows/s end to end\n", *events, wall.Round(time.Millisecond), float64(*events)/wall.Seconds())
	return b.printCheckpoints(*be, "window")
}
