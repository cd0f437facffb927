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
	lookup := func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			benchQuery(b, s, fmt.Sprintf("SELECT * FROM v WHERE k = %d", (i*7919)%rows))
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
	}
	b.Run("scan", lookup)
	benchExec(b, s, "CREATE INDEX v_k ON v (k)")
	b.Run("index", lookup)
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
