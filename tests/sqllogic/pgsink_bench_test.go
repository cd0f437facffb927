package sqllogic

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL sink figures (docs/benchmarks), against the private
// PostgreSQL 15 of pg_test.go (fsync off):
//
//	nice -n 5 go test ./tests/sqllogic -run XXX -bench 'PostgresSink' -benchtime 1x -timeout 30m
//
// STREAMDB_PG_BENCH_ROWS sets the rows per run (default 300000). Each
// reports rows/s from the start of a COPY into streamdb until the target
// table holds every row; BenchmarkPostgresCopy is PostgreSQL's own COPY
// of the same rows over the same connection type, the ceiling.

func pgBenchRows() int {
	if n, err := strconv.Atoi(os.Getenv("STREAMDB_PG_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 300000
}

// benchCopyText is n rows (id, k, v) in COPY's text format.
func benchCopyText(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%d\t%d\t%d\n", i, i%1000, (i*7919)%100000)
	}
	return b.Bytes()
}

func benchExec(b *testing.B, c *pgx.Conn, stmts ...string) {
	for _, s := range stmts {
		if _, err := c.Exec(context.Background(), s); err != nil {
			b.Fatalf("%s: %v", s, err)
		}
	}
}

func benchCopy(b *testing.B, c *pgx.Conn, table string, data []byte) {
	if _, err := c.PgConn().CopyFrom(context.Background(), bytes.NewReader(data), "COPY "+table+" FROM STDIN"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPostgresCopy: PostgreSQL's own COPY into an unindexed table.
func BenchmarkPostgresCopy(b *testing.B) {
	p := StartPG(b)
	pg := p.Conn(b)
	n := pgBenchRows()
	data := benchCopyText(n)
	for i := 0; i < b.N; i++ {
		benchExec(b, pg, "DROP TABLE IF EXISTS t", "CREATE TABLE t (id bigint, k bigint, v bigint)")
		start := time.Now()
		benchCopy(b, pg, "t", data)
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "rows/s")
	}
}

// BenchmarkPostgresSinkAppend: rows COPYed into a streamdb table reach a
// PostgreSQL table through a view and an append sink.
func BenchmarkPostgresSinkAppend(b *testing.B) {
	benchPostgresSink(b, "CREATE MATERIALIZED VIEW out AS SELECT * FROM ev",
		"CREATE TABLE out (id bigint, k bigint, v bigint)", "append", "SELECT count(*) FROM out", func(n int) string { return strconv.Itoa(n) })
}

// BenchmarkPostgresSinkUpsert: the same rows through a GROUP BY view of
// 1000 groups and an upsert sink (each checkpoint upserts the groups that
// changed): rows/s of input until the table holds the final counts.
func BenchmarkPostgresSinkUpsert(b *testing.B) {
	benchPostgresSink(b, "CREATE MATERIALIZED VIEW out AS SELECT k, count(*) AS n FROM ev GROUP BY k",
		"CREATE TABLE out (k bigint PRIMARY KEY, n bigint)", "upsert", "SELECT sum(n) FROM out", func(n int) string { return strconv.Itoa(n) })
}

func benchPostgresSink(b *testing.B, view, table, typ, probe string, want func(int) string) {
	p := StartPG(b)
	pg := p.Conn(b)
	n := pgBenchRows()
	data := benchCopyText(n)
	for i := 0; i < b.N; i++ {
		benchExec(b, pg, "DROP TABLE IF EXISTS out", "DROP TABLE IF EXISTS streamdb_sink_progress", table)
		srv := StartServer(b, "")
		c := srv.Conn(b)
		benchExec(b, c, "CREATE TABLE ev (id BIGINT, k BIGINT, v BIGINT)", view,
			fmt.Sprintf("CREATE SINK out_pg FROM out WITH (connector = 'postgres', url = '%s', table.name = 'out', type = '%s')",
				pgSinkURL(p, "postgres", "", "postgres"), typ))
		start := time.Now()
		benchCopy(b, c, "ev", data)
		for {
			var got string
			if err := pg.QueryRow(context.Background(), "SELECT ("+probe+")::text").Scan(&got); err == nil && got == want(n) {
				break
			}
			if time.Since(start) > 10*time.Minute {
				b.Fatalf("the sink did not deliver %d rows in 10 minutes", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "rows/s")
		srv.Stop()
	}
}
