package sqllogic

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// sgQueries are the batch queries and views TestWindowFilterCastConstOrderPG checks
// against PostgreSQL 15: a cast after a window call with FILTER, and a
// window ORDER BY of an integer constant.
var sgQueries = []string{
	"SELECT id, sum(x) FILTER (WHERE x > 1) OVER (PARTITION BY g ORDER BY id)::numeric AS s, " +
		"count(*) FILTER (WHERE x < 3) OVER (PARTITION BY g)::text AS c FROM sg",
	"SELECT id, rank() OVER (ORDER BY 1) AS r, row_number() OVER (PARTITION BY g ORDER BY 1, id) AS n FROM sg",
}

// TestWindowFilterCastConstOrderPG checks against PostgreSQL 15, in batch
// queries and in views over a keyed table under INSERT, UPDATE and DELETE:
//   - sum(x) FILTER (WHERE ...) OVER (...)::numeric, a cast straight after
//     a window call with FILTER, in batch queries and views;
//   - rank() OVER (ORDER BY 1), sum(1) OVER () without FROM, and ORDER BY 1
//     in a window over a table (a constant, not a select-list position);
func TestWindowFilterCastConstOrderPG(t *testing.T) {
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ddl := []string{"CREATE TABLE sg (id INT PRIMARY KEY, g INT, x INT)"}
	execAll(t, sdb, ddl...)
	execAll(t, pgc, ddl...)

	for _, q := range []string{
		"SELECT rank() OVER (ORDER BY 1) AS r",
		"SELECT sum(1) OVER () AS s, count(*) OVER (ORDER BY 2) AS c",
		"SELECT sum(g) FILTER (WHERE g > 1) OVER (ORDER BY g)::numeric AS s FROM (VALUES (1), (2), (2), (3)) v(g)",
	} {
		sameRowsAsPG(t, sdb, pgc, q)
	}

	vs := viewsPG{t: t, pg: pgc, queries: sgQueries, prefixes: []string{"sgp", "sgm"}, wait: 20 * time.Second}
	vs.create(sdb)
	id := 0
	round := func(c *pgx.Conn, n int) {
		var vals []string
		for range n {
			id++
			vals = append(vals, fmt.Sprintf("(%d, %d, %d)", id, id%3, (id*7)%5))
		}
		stmts := []string{"INSERT INTO sg VALUES " + strings.Join(vals, ", "),
			fmt.Sprintf("DELETE FROM sg WHERE id %% 7 = %d", id%7),
			fmt.Sprintf("UPDATE sg SET x = x + 1 WHERE id %% 4 = %d", id%4)}
		execAll(t, c, stmts...)
		execAll(t, pgc, stmts...)
	}
	vs.check(sdb, "before any row")
	round(sdb, 1)
	vs.check(sdb, "one row")
	round(sdb, 20)
	round(sdb, 20)
	vs.check(sdb, "rounds")
}
