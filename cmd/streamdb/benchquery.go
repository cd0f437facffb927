package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/streamdb/streamdb/sql"
	"github.com/streamdb/streamdb/types"
)

// benchQuery runs a view over a join or a rank node in-process, as bench
// does for GROUP BY: COPY the rows in --batch statements (alternating
// between the join's two streams), then CHECKPOINT until the view is
// complete, checked against figures computed here.
//
//	join:   l(k, v), r(k, w), --rows rows each, row i has k = i mod keys;
//	        SELECT l.k, l.v, r.w FROM l JOIN r ON l.k = r.k
//	        (rows^2/keys rows in the view).
//	topn:   t(k, v), v a permutation of [0, rows); SELECT k, v FROM t
//	        ORDER BY v DESC LIMIT 10.
//	rownum: the same rows; the top 3 by v of each k (ROW_NUMBER).
func benchQuery(query string, rows, keys int, interval string, batch, par int, cache int64, cpuprofile string) error {
	var tables []string
	var view, check string
	var want int64
	perm := func(i int) int64 { return int64((uint64(i) * 2654435761) % uint64(rows)) } // a permutation when rows is not a multiple of 2654435761's factors
	switch query {
	case "join":
		tables = []string{"l", "r"}
		view = "SELECT l.k, l.v, r.w FROM l JOIN r ON l.k = r.k"
		check = "SELECT count(*) FROM v"
		for k := 0; k < keys; k++ {
			n := int64(rows / keys)
			if k < rows%keys {
				n++
			}
			want += n * n
		}
	case "topn":
		tables = []string{"t"}
		view = "SELECT k, v FROM t ORDER BY v DESC LIMIT 10"
		check = "SELECT sum(v) FROM v"
		for i := 0; i < 10 && i < rows; i++ {
			want += int64(rows - 1 - i)
		}
	case "rownum":
		tables = []string{"t"}
		view = "SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) s WHERE rn <= 3"
		check = "SELECT sum(v) FROM v"
		top := make([][3]int64, keys)
		for k := range top {
			top[k] = [3]int64{-1, -1, -1}
		}
		for i := 0; i < rows; i++ {
			t, v := &top[i%keys], perm(i)
			switch {
			case v > t[0]:
				t[0], t[1], t[2] = v, t[0], t[1]
			case v > t[1]:
				t[1], t[2] = v, t[1]
			case v > t[2]:
				t[2] = v
			}
		}
		for _, t := range top {
			for _, v := range t {
				if v >= 0 {
					want += v
				}
			}
		}
	default:
		return fmt.Errorf("--query %q: want groupby, join, topn or rownum", query)
	}
	if cpuprofile != "" {
		stop, err := startProfile(cpuprofile)
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
	eng, err := sql.Open(sql.Config{DataDir: dir, Parallelism: par, StateCacheBytes: cache << 20})
	if err != nil {
		return err
	}
	defer eng.Close()
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
	stmts := []string{"SET checkpoint.interval = '" + interval + "'"}
	for _, t := range tables {
		stmts = append(stmts, "CREATE TABLE "+t+" (k BIGINT, v BIGINT)")
	}
	if query == "join" {
		stmts[len(stmts)-1] = "CREATE TABLE r (k BIGINT, w BIGINT)"
	}
	stmts = append(stmts, "CREATE MATERIALIZED VIEW v AS "+view)
	for _, q := range stmts {
		if _, err := run(q); err != nil {
			return err
		}
	}
	fmt.Printf("streamdb bench --query %s: %d rows per stream (%d streams), %d keys, checkpoint.interval %s\n  %s\n",
		query, rows, len(tables), keys, interval, view)

	start := time.Now()
	var buf bytes.Buffer
	for done := 0; done < rows; {
		n := min(batch, rows-done)
		for ti, t := range tables {
			res, err := run("COPY " + t + " FROM STDIN")
			if err != nil {
				return err
			}
			buf.Reset()
			for i := done; i < done+n; i++ {
				buf.WriteString(strconv.Itoa(i % keys))
				buf.WriteByte('\t')
				if query == "join" {
					buf.WriteString(strconv.Itoa(i*2 + ti))
				} else {
					buf.WriteString(strconv.FormatInt(perm(i), 10))
				}
				buf.WriteByte('\n')
			}
			if err := res.CopyIn.Write(buf.Bytes()); err != nil {
				return err
			}
			if _, err := res.CopyIn.Done(); err != nil {
				return err
			}
		}
		done += n
	}
	ingest := time.Since(start)
	for {
		if _, err := run("CHECKPOINT"); err != nil {
			return err
		}
		got, err := scalarAny(ctx, run, check)
		if err != nil {
			return err
		}
		if got == want {
			break
		}
		fmt.Printf("  (view not complete: %s = %d, want %d)\n", check, got, want)
	}
	complete := time.Since(start)
	in := float64(rows * len(tables))
	fmt.Printf("ingest (COPY, fsync):  %v, %.2fM rows/s\n", ingest.Round(time.Millisecond), in/ingest.Seconds()/1e6)
	fmt.Printf("view complete:         %v, %.2fM input rows/s end to end (%d rows in the view check: %s = %d)\n",
		complete.Round(time.Millisecond), in/complete.Seconds()/1e6, want, check, want)
	return nil
}

// scalarAny reads an integer-valued scalar of any numeric type.
func scalarAny(ctx context.Context, run func(string) (*sql.Result, error), q string) (int64, error) {
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
	if rec.NumRows() == 0 {
		return 0, nil
	}
	for _, t := range []types.T{types.TInt64, types.NumericOf(38, 0)} {
		if rec.Column(0).DataType().ID() != t.Arrow().ID() {
			continue
		}
		d := types.DatumAt(rec.Column(0), 0, t)
		switch {
		case d.Null:
			return 0, nil
		case t == types.TInt64:
			return d.I, nil
		default:
			return d.D.BigInt().Int64(), nil
		}
	}
	return 0, fmt.Errorf("%s: unexpected type %s", q, rec.Column(0).DataType())
}
