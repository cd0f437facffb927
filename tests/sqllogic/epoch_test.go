package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// epochViews are the view shapes an epoch race can hurt: rows without
// aggregation (keyed by source position), filtered and projected ones, views
// over them (a multiset over a changelog), an aggregate, and views over an
// aggregate and over a plain view. Each is checked against its batch query.
var epochViews = []struct{ name, query, oracle string }{
	{"e_rows", "SELECT a, b FROM s", ""},
	{"e_filtered", "SELECT a, b * 2 AS b2 FROM s WHERE a % 3 <> 0", ""},
	{"e_over_rows", "SELECT a, b FROM e_rows WHERE b >= 0", "SELECT a, b FROM s WHERE b >= 0"},
	{"e_agg", "SELECT a % 10 AS k, count(*) AS n, sum(b) AS sb FROM s GROUP BY a % 10", ""},
	{"e_over_agg", "SELECT k, n FROM e_agg WHERE n > 0", "SELECT a % 10 AS k, count(*) AS n FROM s GROUP BY a % 10"},
	{"e_agg_over_rows", "SELECT count(*) AS n, sum(a) AS sa FROM e_rows", "SELECT count(*) AS n, sum(a) AS sa FROM s"},
}

// TestEpochOwnership is the regression test for writes that crossed an
// epoch boundary: a sink that acknowledged barrier N and went on writing
// rows of epoch N+1 into N's batch lost them when the batch was committed
// (views without aggregation lost the tail of a COPY with no crash). Many
// COPYs run while another session takes CHECKPOINTs back to back, and every
// view must then hold exactly what its batch query gives.
func TestEpochOwnership(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE s (a BIGINT, b BIGINT)", "SET checkpoint.interval = '10ms'")
	for _, v := range epochViews {
		execAll(t, c, "CREATE MATERIALIZED VIEW "+v.name+" AS "+v.query)
	}
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	barrierErr := make(chan error, 1)
	repeatExec(t, srv, &wg, &stop, barrierErr, func(int) string { return "CHECKPOINT" }, nil)
	const reps, rowsPer = 120, 500
	next := int64(0)
	for rep := 0; rep < reps; rep++ {
		var csv strings.Builder
		for range rowsPer {
			fmt.Fprintf(&csv, "%d,%d\n", next, next%7-1)
			next++
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(csv.String()), "COPY s FROM STDIN (FORMAT csv)"); err != nil {
			t.Fatalf("COPY %d: %v", rep, err)
		}
		if rep%40 == 39 {
			checkEpochViews(t, c, fmt.Sprintf("after COPY %d", rep))
		}
	}
	stop.Store(true)
	wg.Wait()
	close(barrierErr)
	if err := <-barrierErr; err != nil {
		t.Fatal(err)
	}
	checkEpochViews(t, c, "at the end")
}

// checkEpochViews settles the views (one CHECKPOINT for views over the
// stream, one more for views over views) and compares each with its oracle.
func checkEpochViews(t *testing.T, c *pgx.Conn, when string) {
	t.Helper()
	execAll(t, c, "CHECKPOINT", "CHECKPOINT")
	for _, v := range epochViews {
		oracle := v.oracle
		if oracle == "" {
			oracle = v.query
		}
		got, want := rowSet(t, c, "SELECT * FROM "+v.name), rowSet(t, c, oracle)
		if got != want {
			t.Fatalf("%s: view %s (%s) differs from its batch query:\n%s", when, v.name, v.query, diffLines(got, want))
		}
	}
}

// diffLines describes how two rowSet results differ: row counts, and the
// first rows only one of them has.
func diffLines(got, want string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		if s != "" {
			for _, l := range strings.Split(s, "; ") {
				m[l]++
			}
		}
		return m
	}
	g, w := count(got), count(want)
	var extra, missing []string
	ng, nw := 0, 0
	for l, n := range g {
		ng += n
		if d := n - w[l]; d > 0 && len(extra) < 5 {
			extra = append(extra, fmt.Sprintf("%s (x%d)", l, d))
		}
	}
	for l, n := range w {
		nw += n
		if d := n - g[l]; d > 0 && len(missing) < 5 {
			missing = append(missing, fmt.Sprintf("%s (x%d)", l, d))
		}
	}
	return fmt.Sprintf("view has %d rows, batch query %d; extra in view: %v; missing from view: %v", ng, nw, extra, missing)
}
