package sqllogic

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

var diffSeed = flag.Uint64("seed", 20261130, "seed of TestDifferential and TestDifferentialPG")

// TestDifferential generates views (filters × group keys × aggregates),
// feeds random data in several batches, and after each CHECKPOINT checks
// every view against the same query run as a batch query over the stream —
// the engine's batch operators are the oracle for its incremental ones.
// The seed is fixed so CI is reproducible; -args -seed=N explores others.
func TestDifferential(t *testing.T) {
	t.Parallel()
	seed := *diffSeed
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (a BIGINT, b BIGINT, c TEXT, d NUMERIC(10,2))")

	filters := []string{"", "WHERE a > 3", "WHERE b % 3 = 0", "WHERE c LIKE 'x%'", "WHERE a + b < 10 AND c <> 'yy'",
		"WHERE d > 1.5 OR b IS NULL", "WHERE a BETWEEN 2 AND 7", "WHERE c IN ('x', 'z')"}
	keys := []string{"a", "c", "a % 4", "b, c", "lower(c)", "a, b % 2"}
	aggs := []string{"count(*)", "count(b)", "count(DISTINCT b)", "sum(a)", "sum(d)", "min(b)", "max(c)", "max(d)",
		"min(a + b)", "avg(a)", "sum(b) * 2"}
	type view struct{ name, query string }
	var views []view
	for i := 0; i < 12; i++ {
		k := keys[rng.IntN(len(keys))]
		var sel []string
		for j := 0; j < 1+rng.IntN(3); j++ {
			sel = append(sel, fmt.Sprintf("%s AS x%d", aggs[rng.IntN(len(aggs))], j))
		}
		having := ""
		if rng.IntN(4) == 0 {
			having = " HAVING count(*) > 1"
		}
		q := fmt.Sprintf("SELECT %s, %s FROM t %s GROUP BY %s%s", k, strings.Join(sel, ", "),
			filters[rng.IntN(len(filters))], k, having)
		if i == 11 {
			q = "SELECT a, b FROM t " + filters[rng.IntN(len(filters))] // no aggregation
		}
		views = append(views, view{fmt.Sprintf("v%d", i), q})
	}
	// Views over views: aggregates over an aggregate (retractions flow down).
	views = append(views,
		view{"vv0", "SELECT n, count(*) AS ngroups, min(k) AS lo, max(k) AS hi FROM v_base GROUP BY n"},
		view{"vv1", "SELECT k, n FROM v_base WHERE n > 2"})
	execAll(t, c, "CREATE MATERIALIZED VIEW v_base AS SELECT a % 5 AS k, count(*) AS n FROM t GROUP BY a % 5")
	for _, v := range views {
		execAll(t, c, "CREATE MATERIALIZED VIEW "+v.name+" AS "+v.query)
	}
	texts := []string{"x", "y", "z", "xx", "yy", "Xa"}
	for round := 0; round < 6; round++ {
		var rows []string
		for i := 0; i < 50+rng.IntN(200); i++ {
			b := "NULL"
			if rng.IntN(8) != 0 {
				b = fmt.Sprint(rng.IntN(12) - 2)
			}
			rows = append(rows, fmt.Sprintf("(%d, %s, '%s', %d.%02d)", rng.IntN(10), b, texts[rng.IntN(len(texts))], rng.IntN(4), rng.IntN(100)))
		}
		execAll(t, c, "INSERT INTO t VALUES "+strings.Join(rows, ", "))
		// One CHECKPOINT settles views over the stream; one more settles
		// the views over views (they read the changelog of the epoch before).
		execAll(t, c, "CHECKPOINT", "CHECKPOINT")
		for _, v := range append(views, view{"v_base", "SELECT a % 5 AS k, count(*) AS n FROM t GROUP BY a % 5"}) {
			query := v.query
			if strings.Contains(query, "v_base") {
				query = strings.ReplaceAll(query, "FROM v_base", "FROM (SELECT a % 5 AS k, count(*) AS n FROM t GROUP BY a % 5) AS b")
			}
			got, want := rowSet(t, c, "SELECT * FROM "+v.name), rowSet(t, c, query)
			if got != want {
				t.Fatalf("round %d: view %s (%s)\n got: %s\nwant: %s", round, v.name, v.query, got, want)
			}
		}
	}
}

// rowSet runs q and returns its rows as sorted text lines.
func rowSet(t *testing.T, c *pgx.Conn, q string) string {
	t.Helper()
	res := c.PgConn().ExecParams(context.Background(), q, nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatalf("%s: %v", q, res.Err)
	}
	lines := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		vals := make([]string, len(r))
		for j, v := range r {
			if v == nil {
				vals[j] = "NULL"
			} else {
				vals[j] = string(v)
			}
		}
		lines[i] = strings.Join(vals, "|")
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}
