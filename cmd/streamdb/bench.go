package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"time"

	"github.com/streamdb/streamdb/sql"
	"github.com/streamdb/streamdb/types"
)

// bench runs the continuous GROUP BY benchmark in-process on a temporary
// data directory: COPY rows (k BIGINT, v BIGINT) into a stream that has
// `SELECT k, count(*), sum(v) FROM t GROUP BY k` as a view, and report
// ingest rows/s, the time until the view is complete, and checkpoint
// durations. `streamdb bench -h` lists the flags.
func bench(args []string) error {
	if len(args) > 0 && args[0] == "nexmark" {
		return benchNexmark(args[1:])
	}
	if len(args) > 0 && args[0] == "backends" {
		return benchBackends(args[1:])
	}
	if len(args) > 0 && args[0] == "window" {
		return benchWindow(args[1:])
	}
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	rows := fs.Int("rows", 10_000_000, "rows to ingest")
	keys := fs.Int("keys", 1000, "distinct group keys")
	interval := fs.String("interval", "1s", "checkpoint.interval ('off' disables periodic checkpoints)")
	batch := fs.Int("batch", 500_000, "rows per COPY statement")
	par := fs.Int("parallelism", 0, "aggregate instances per job (0: cores)")
	cache := fs.Int64("state-cache-mb", 1024, "memory for the job's aggregate state (0: unbounded)")
	snap := fs.Bool("savepoint", false, "also time CREATE SAVEPOINT and RESTORE FROM SAVEPOINT of the view")
	restart := fs.Bool("restart", false, "also time closing and reopening the database until the view serves again")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run (of the steady phase with --steady) to this file")
	random := fs.Bool("random", false, "draw keys uniformly at random (as bench/ does) instead of cycling through them")
	steady := fs.Int("steady", 0, "after the view is complete, time this many CHECKPOINTs, each after a 1000-row COPY")
	query := fs.String("query", "groupby", "the view: groupby, join (inner join of two streams of --rows rows each on k), topn (ORDER BY v DESC LIMIT 10) or rownum (ROW_NUMBER() per k, top 3)")
	fs.Parse(args)
	if *query != "groupby" {
		return benchQuery(*query, *rows, *keys, *interval, *batch, *par, *cache, *cpuprofile)
	}
	if *cpuprofile != "" && *steady == 0 {
		stop, err := startProfile(*cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}

	dir, err := os.MkdirTemp("", "streamdb-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := sql.Config{DataDir: dir, Parallelism: *par, StateCacheBytes: *cache << 20}
	eng, err := sql.Open(cfg)
	if err != nil {
		return err
	}
	defer func() { eng.Close() }()
	s := eng.NewSession("streamdb", "streamdb")
	ctx := context.Background()
	run := func(q string) (*sql.Result, error) {
		stmts, err := s.PrepareAll(ctx, q)
		if err != nil {
			return nil, err
		}
		var res *sql.Result
		for _, st := range stmts {
			if res, err = s.Execute(ctx, st, nil); err != nil {
				return nil, fmt.Errorf("%s: %w", q, err)
			}
		}
		return res, nil
	}
	for _, q := range []string{
		"SET checkpoint.interval = '" + *interval + "'",
		"CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k",
	} {
		if _, err := run(q); err != nil {
			return err
		}
	}
	fmt.Printf("streamdb bench: %d rows, %d keys, checkpoint.interval %s, data in %s\n", *rows, *keys, *interval, dir)

	rng := rand.New(rand.NewPCG(uint64(*rows), uint64(*keys)))
	start := time.Now()
	var buf bytes.Buffer
	for done := 0; done < *rows; {
		n := min(*batch, *rows-done)
		res, err := run("COPY t FROM STDIN")
		if err != nil {
			return err
		}
		buf.Reset()
		for i := done; i < done+n; i++ {
			k := i % *keys
			if *random {
				k = rng.IntN(*keys)
			}
			buf.WriteString(strconv.Itoa(k))
			buf.WriteByte('\t')
			buf.WriteString(strconv.Itoa(i % 100))
			buf.WriteByte('\n')
		}
		if err := res.CopyIn.Write(buf.Bytes()); err != nil {
			return err
		}
		if _, err := res.CopyIn.Done(); err != nil {
			return err
		}
		done += n
	}
	ingest := time.Since(start)
	// The view is complete when its counts add up to every row.
	for {
		if _, err := run("CHECKPOINT"); err != nil {
			return err
		}
		total, err := scalar(ctx, run, "SELECT sum(c) FROM v")
		if err != nil {
			return err
		}
		if total == int64(*rows) {
			break
		}
	}
	complete := time.Since(start)
	fmt.Printf("ingest (COPY, fsync):  %v, %.2fM rows/s\n", ingest.Round(time.Millisecond), float64(*rows)/ingest.Seconds()/1e6)
	fmt.Printf("view complete:         %v, %.2fM rows/s end to end\n", complete.Round(time.Millisecond), float64(*rows)/complete.Seconds()/1e6)

	if *steady > 0 {
		if *cpuprofile != "" { // profile the steady phase only
			stop, err := startProfile(*cpuprofile)
			if err != nil {
				return err
			}
			defer stop()
		}
		var ds []time.Duration
		for r := 0; r < *steady; r++ {
			res, err := run("COPY t FROM STDIN")
			if err != nil {
				return err
			}
			buf.Reset()
			for i := 0; i < 1000; i++ {
				fmt.Fprintf(&buf, "%d\t%d\n", (r*7919+i*104729)%*keys, i)
			}
			if err := res.CopyIn.Write(buf.Bytes()); err != nil {
				return err
			}
			if _, err := res.CopyIn.Done(); err != nil {
				return err
			}
			t0 := time.Now()
			if _, err := run("CHECKPOINT"); err != nil {
				return err
			}
			ds = append(ds, time.Since(t0))
		}
		fmt.Printf("steady CHECKPOINTs:    %v\n", roundAll(ds))
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		fmt.Printf("steady CHECKPOINT:     %d after 1000-row COPYs into %d keys of state: p50 %v, p99 %v\n",
			len(ds), *keys, ds[len(ds)/2].Round(time.Millisecond), ds[(len(ds)*99)/100].Round(time.Millisecond))
	}
	timed := func(what, q string) error {
		t0 := time.Now()
		if _, err := run(q); err != nil {
			return err
		}
		fmt.Printf("%-22s %v\n", what+":", time.Since(t0).Round(time.Millisecond))
		return nil
	}
	if *snap {
		if err := timed("CREATE SAVEPOINT", "CREATE SAVEPOINT bench"); err != nil {
			return err
		}
		if err := timed("RESTORE FROM SAVEPOINT", "RESTORE v FROM SAVEPOINT bench"); err != nil {
			return err
		}
	}
	if *restart {
		t0 := time.Now()
		if err := eng.Close(); err != nil {
			return err
		}
		if eng, err = sql.Open(cfg); err != nil {
			return err
		}
		s = eng.NewSession("streamdb", "streamdb")
		if _, err := scalar(ctx, run, "SELECT sum(c) FROM v"); err != nil {
			return err
		}
		fmt.Printf("%-22s %v\n", "restart to serving:", time.Since(t0).Round(time.Millisecond))
	}
	// Periodic checkpoints are what checkpoint.interval costs; manual ones
	// (CHECKPOINT) also wait for the jobs to catch up with every row
	// acknowledged before them, so after a bulk load they include the
	// backlog's processing time.
	for _, trigger := range []string{"periodic", "manual"} {
		res, err := run(`SELECT duration_ms FROM streamdb_checkpoints WHERE status = 'COMPLETED' AND "trigger" = '` + trigger + `'`)
		if err != nil {
			return err
		}
		var durs []int64
		for {
			rec, err := res.Rows.Next(ctx)
			if err != nil || rec == nil {
				break
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				durs = append(durs, types.DatumAt(rec.Column(0), i, types.TInt64).I)
			}
			rec.Release()
		}
		res.Rows.Close()
		if len(durs) > 0 {
			sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
			fmt.Printf("%-22s %d, duration p50 %d ms, p99 %d ms, max %d ms\n", trigger+" checkpoints:",
				len(durs), durs[len(durs)/2], durs[(len(durs)*99)/100], durs[len(durs)-1])
		}
	}
	return nil
}

func scalar(ctx context.Context, run func(string) (*sql.Result, error), q string) (int64, error) {
	res, err := run(q)
	if err != nil {
		return 0, err
	}
	defer res.Rows.Close()
	rec, err := res.Rows.Next(ctx)
	if err != nil || rec == nil {
		return 0, err
	}
	defer rec.Release()
	d := types.DatumAt(rec.Column(0), 0, types.NumericOf(38, 0))
	if d.Null {
		return 0, nil
	}
	return d.D.BigInt().Int64(), nil
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// startProfile writes a CPU profile to path until stop is called.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
