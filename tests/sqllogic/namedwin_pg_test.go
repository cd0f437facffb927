package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// nwQueries use named windows (WINDOW w AS (...), OVER w, OVER (w ...))
// as PostgreSQL 15 allows them; each runs as a batch query and as a
// materialized view and must equal PostgreSQL's result.
var nwQueries = []string{
	// OVER w for several functions, one definition.
	"SELECT id, g, lag(v) OVER w AS a, sum(v) OVER w AS b, row_number() OVER w AS c FROM nw WINDOW w AS (PARTITION BY g ORDER BY o, id)",
	// A definition that builds on another, a frame added in OVER (w ...),
	// an ORDER BY added to a window that has none, two windows.
	"SELECT id, sum(v) OVER (w ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS a, first_value(v) OVER w2 AS b, " +
		"count(*) OVER p AS c, max(v) OVER (p ORDER BY o, id) AS d FROM nw " +
		"WINDOW p AS (PARTITION BY g), w AS (p ORDER BY o, id), w2 AS (w ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)",
	// A named window beside an inline one, names in any case.
	"SELECT id, avg(v) OVER W AS a, dense_rank() OVER (PARTITION BY g ORDER BY o) AS b FROM nw WINDOW w AS (PARTITION BY g)",
}

// TestNamedWindowPG checks named windows against PostgreSQL 15 in batch
// queries and in views (both state backends, across UPDATE and DELETE, a
// restart and kill -9), and that streamdb refuses what PostgreSQL refuses
// with PostgreSQL's SQLSTATE.
func TestNamedWindowPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ddl := "CREATE TABLE nw (id INT PRIMARY KEY, g INT, o INT, v BIGINT)"
	execAll(t, sdb, ddl)
	execAll(t, pgc, ddl)

	for _, sql := range []string{
		"SELECT sum(v) OVER w FROM nw",                                                              // no such window
		"SELECT sum(v) OVER (w ORDER BY id) FROM nw WINDOW x AS (PARTITION BY g)",                   // no such window
		"SELECT sum(v) OVER w FROM nw WINDOW w AS (PARTITION BY g), w AS (ORDER BY id)",             // defined twice
		"SELECT sum(v) OVER (w PARTITION BY o) FROM nw WINDOW w AS (PARTITION BY g)",                // overrides PARTITION BY
		"SELECT sum(v) OVER (w ORDER BY id) FROM nw WINDOW w AS (ORDER BY o)",                       // overrides ORDER BY
		"SELECT sum(v) OVER (w) FROM nw WINDOW w AS (ORDER BY id ROWS 2 PRECEDING)",                 // copies a frame
		"SELECT sum(v) OVER w2 FROM nw WINDOW w AS (ORDER BY id ROWS 2 PRECEDING), w2 AS (w)",       // copies a frame
		"SELECT sum(v) OVER w FROM nw WINDOW w AS (w2 ORDER BY id), w2 AS (PARTITION BY g)",         // refers to a later one
		"SELECT sum(v) OVER w FROM nw WINDOW w AS (PARTITION BY nosuch)",                            // a bad column
		"SELECT id FROM nw WHERE sum(v) OVER w > 0 WINDOW w AS (ORDER BY id)",                       // not allowed in WHERE
		"SELECT id FROM nw WINDOW w AS (ORDER BY nosuch)",                                           // unused, still bound
		"SELECT sum(v) OVER w FROM nw WINDOW w AS (ORDER BY id), u AS (PARTITION BY lag(v) OVER w)", // a window function in a definition
		"SELECT g FROM nw GROUP BY g WINDOW w AS (ORDER BY id)",                                     // not grouped
	} {
		want := sqlState(t, pgc, sql)
		if want == "" {
			t.Fatalf("PostgreSQL accepts %s", sql)
		}
		if got := sqlState(t, sdb, sql); got != want {
			t.Errorf("%s: SQLSTATE %q, want %s", sql, got, want)
		}
	}
	execAll(t, sdb, "SELECT 1") // the server is still up
	for _, q := range []string{"SELECT id FROM nw WINDOW w AS (ORDER BY o)", "SELECT g FROM nw GROUP BY g WINDOW w AS (ORDER BY g)"} {
		execAll(t, sdb, q) // a definition no function uses
	}

	vs := viewsPG{t: t, pg: pgc, queries: nwQueries, prefixes: []string{"nwp", "nwm"}, wait: 30 * time.Second}
	vs.create(sdb)
	r := rand.New(rand.NewPCG(5, 15))
	id := 0
	null := func(s string) string {
		if r.IntN(8) == 0 {
			return "NULL"
		}
		return s
	}
	round := func(c *pgx.Conn, rows int) {
		var vals []string
		for range rows {
			id++
			vals = append(vals, fmt.Sprintf("(%d, %s, %s, %s)", id, null(fmt.Sprint(r.IntN(4))), null(fmt.Sprint(r.IntN(9))), null(fmt.Sprint(r.IntN(100)-30))))
		}
		stmts := []string{"INSERT INTO nw VALUES " + strings.Join(vals, ", "),
			fmt.Sprintf("UPDATE nw SET v = v + %d WHERE id %% 5 = %d", r.IntN(20)-5, r.IntN(5)),
			fmt.Sprintf("UPDATE nw SET g = %d WHERE id %% 9 = %d", r.IntN(4), r.IntN(9)),
			fmt.Sprintf("DELETE FROM nw WHERE id %% 13 = %d", r.IntN(13))}
		execAll(t, c, stmts...)
		execAll(t, pgc, stmts...)
	}
	vs.run(srv, sdb, round, []int{30, 80}, 40)
}
