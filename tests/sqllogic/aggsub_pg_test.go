package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestAggFilterSubqueryPG: subqueries inside an aggregate's FILTER (WHERE
// ...) and arguments — a scalar subquery, EXISTS, x [NOT] IN (SELECT ...),
// uncorrelated and correlated — print PostgreSQL 15's rows in batch
// queries; as materialized views (uncorrelated scalar and EXISTS forms)
// they stay equal to PostgreSQL's result over rounds of INSERT, UPDATE and
// DELETE of both the aggregated table and the subquery's, and after a kill
// -9 and restart. IN (subquery) and correlated subqueries there are 0A000.
func TestAggFilterSubqueryPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t,
		"CREATE TABLE fa (id INT PRIMARY KEY, g INT, x INT, v BIGINT)",
		"CREATE TABLE fb (id INT PRIMARY KEY, y INT)")
	views := []string{
		"SELECT g, count(*) FILTER (WHERE x > (SELECT min(y) FROM fb)) AS c, sum(v) AS s FROM fa GROUP BY g",
		"SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM fb WHERE y > 5)) AS c, sum(v) FILTER (WHERE NOT EXISTS (SELECT 1 FROM fb WHERE y < 0)) AS s FROM fa",
		"SELECT g, sum(v) FILTER (WHERE x <= (SELECT max(y) FROM fb) AND v > 10) AS s, max(x) FILTER (WHERE x < (SELECT count(*) FROM fb)) AS m FROM fa GROUP BY g",
	}
	batch := []string{
		"SELECT g, count(*) FILTER (WHERE x IN (SELECT y FROM fb)), count(*) FILTER (WHERE x NOT IN (SELECT y FROM fb)) FROM fa GROUP BY g",
		"SELECT count(*) FILTER (WHERE x IN (SELECT y FROM fb WHERE fb.id < fa.g * 3)), sum(v) FILTER (WHERE EXISTS (SELECT 1 FROM fb WHERE fb.y = fa.x)) FROM fa",
		"SELECT g, count(*) FILTER (WHERE x > (SELECT min(y) FROM fb)), avg(v) FILTER (WHERE x = (SELECT y FROM fb WHERE fb.id = fa.id)) FROM fa GROUP BY g",
		"SELECT g, sum(CASE WHEN x IN (SELECT y FROM fb) THEN v ELSE 0 END) FROM fa GROUP BY g HAVING count(*) FILTER (WHERE x NOT IN (SELECT y FROM fb WHERE y IS NOT NULL)) >= 0",
		"SELECT g, array_agg(id ORDER BY id) FILTER (WHERE x IN (SELECT y FROM fb)) FROM fa GROUP BY g",
	}
	cases := d.viewAndBatchCases("fs", "agg-filter-subquery", views, batch)
	for _, q := range []string{
		"CREATE MATERIALIZED VIEW fsx1 AS SELECT g, count(*) FILTER (WHERE x IN (SELECT y FROM fb)) AS c FROM fa GROUP BY g",
		"CREATE MATERIALIZED VIEW fsx2 AS SELECT g, count(*) FILTER (WHERE EXISTS (SELECT 1 FROM fb WHERE fb.y = fa.x)) AS c FROM fa GROUP BY g",
	} {
		if got := sqlState(t, d.sdb, q); got != "0A000" {
			t.Errorf("%s: SQLSTATE %q, want 0A000", q, got)
		}
	}
	rng := rand.New(rand.NewPCG(30, 2))
	stmt := func() string {
		switch rng.IntN(7) {
		case 0, 1:
			x := fmt.Sprint(rng.IntN(12))
			if rng.IntN(8) == 0 {
				x = "NULL"
			}
			return fmt.Sprintf("INSERT INTO fa VALUES (%d, %d, %s, %d) ON CONFLICT (id) DO UPDATE SET x = EXCLUDED.x, v = EXCLUDED.v", rng.IntN(40), rng.IntN(3), x, rng.IntN(30))
		case 2:
			return fmt.Sprintf("DELETE FROM fa WHERE id = %d", rng.IntN(40))
		case 3, 4:
			y := fmt.Sprint(rng.IntN(12) - 1)
			if rng.IntN(6) == 0 {
				y = "NULL"
			}
			return fmt.Sprintf("INSERT INTO fb VALUES (%d, %s) ON CONFLICT (id) DO UPDATE SET y = EXCLUDED.y", rng.IntN(12), y)
		case 5:
			return fmt.Sprintf("UPDATE fb SET y = y + %d WHERE id = %d", rng.IntN(5)-2, rng.IntN(12))
		}
		return fmt.Sprintf("DELETE FROM fb WHERE id = %d", rng.IntN(12))
	}
	for round := 0; round < 8; round++ {
		for range 12 {
			s := stmt()
			d.mustExec(d.sdb, "streamdb", s)
			d.mustExec(d.pg, "PostgreSQL", s)
		}
		if round == 5 {
			srv.Kill9()
			srv.Restart(t)
			d.sdb = srv.Conn(t)
		}
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
		if t.Failed() {
			return
		}
	}
}
