package sql

import (
	"context"
	"fmt"
	"testing"

	"github.com/streamdb/streamdb/types"
)

// BenchmarkViewIndexLookup is a point lookup (WHERE k = <value>) on a view
// of 1M rows, first read by scanning the view, then through CREATE INDEX
// on k (docs/benchmarks/2026-12-06-view-index-lookup.md).
//
//	go test ./sql/ -run '^$' -bench ViewIndexLookup -benchtime 20x
func BenchmarkViewIndexLookup(b *testing.B) {
	const rows = 1_000_000
	_, s := openBenchEngine(b, 0)
	benchExec(b, s, "CREATE TABLE t (k BIGINT, v BIGINT)")
	benchExec(b, s, "CREATE MATERIALIZED VIEW v AS SELECT k, v FROM t")
	_, chunks := copyText(rows, rows)
	benchCopy(b, s, "t", chunks)
	for {
		benchExec(b, s, "CHECKPOINT")
		if viewRows(b, s, "v") == rows {
			break
		}
	}
	b.Run("scan", benchLookups(s, "v", 7919, rows))
	benchExec(b, s, "CREATE INDEX v_k ON v (k)")
	b.Run("index", benchLookups(s, "v", 7919, rows))
}

// benchLookups runs SELECT * FROM rel WHERE k = <value>, the value
// stepping by step modulo rows.
func benchLookups(s *Session, rel string, step, rows int) func(b *testing.B) {
	return func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			benchQuery(b, s, fmt.Sprintf("SELECT * FROM %s WHERE k = %d", rel, (i*step)%rows))
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
	}
}

func viewRows(b *testing.B, s *Session, view string) int64 {
	res := benchExec(b, s, "SELECT count(*) FROM "+view)
	defer res.Rows.Close()
	rec, err := res.Rows.Next(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	return types.DatumAt(rec.Column(0), 0, types.TInt64).I
}

// BenchmarkTableIndexLookup is a point lookup (WHERE k = <value>) on a
// 1M-row append-only table and on a 1M-row keyed table, scanned, then
// through CREATE INDEX on k (docs/benchmarks/2026-12-07-table-index.md).
//
//	go test ./sql/ -run '^$' -bench TableIndexLookup -benchtime 10x
func BenchmarkTableIndexLookup(b *testing.B) {
	const rows = 1_000_000
	_, s := openBenchEngine(b, 0)
	benchExec(b, s, "CREATE TABLE t (k BIGINT, v BIGINT)")
	benchExec(b, s, "CREATE TABLE tk (id BIGINT PRIMARY KEY, k BIGINT)")
	_, chunks := copyText(rows, rows)
	benchCopy(b, s, "t", chunks)
	// The keyed table: id i, k a permutation of the ids.
	data := make([]byte, 0, rows*16)
	for i := 0; i < rows; i++ {
		data = fmt.Appendf(data, "%d\t%d\n", i, (i*7919)%rows)
	}
	benchCopy(b, s, "tk", chunked(data))
	b.Run("stream/scan", benchLookups(s, "t", 104729, rows))
	b.Run("keyed/scan", benchLookups(s, "tk", 104729, rows))
	benchExec(b, s, "CREATE INDEX t_k ON t (k)")
	benchExec(b, s, "CREATE INDEX tk_k ON tk (k)")
	b.Run("stream/index", benchLookups(s, "t", 104729, rows))
	b.Run("keyed/index", benchLookups(s, "tk", 104729, rows))
}
