package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestUnnestLateralPG checks unnest of a column in FROM (FROM t,
// unnest(t.a) AS u(x), and the same with CROSS JOIN LATERAL) against
// PostgreSQL 15: batch queries, and materialized views over a keyed table
// whose rows are inserted, updated and deleted, so each view must retract
// the elements of the old array (as a GROUP BY key, under sum and count,
// filtered; an inner JOIN LATERAL ... ON; unnest in the select list,
// which a view runs the same way; LEFT JOIN LATERAL ... ON true, which
// keeps a row with a NULL element for a NULL or empty array); then a
// kill -9 and restart, and more changes. Last, that multidimensional
// arrays (in every input form) and LEFT JOIN LATERAL with a condition
// other than true are refused with 0A000.
func TestUnnestLateralPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	d := &diffRun{t: t, sdb: srv.Conn(t), pg: pg.Conn(t), strict: true, logged: map[string]bool{}}
	ddl := "CREATE TABLE ul (id INT PRIMARY KEY, g INT, a INT[], b TEXT[])"
	d.mustExec(d.sdb, "streamdb", ddl)
	d.mustExec(d.pg, "PostgreSQL", ddl)
	rng := rand.New(rand.NewPCG(30, 3))

	views := []string{
		"SELECT t.id, u.x FROM ul t, unnest(t.a) AS u(x)",
		"SELECT x, count(*) AS n, min(id) AS lo FROM ul, unnest(a) AS x GROUP BY x",
		"SELECT g, sum(x) AS s, count(x) AS c, count(*) AS n FROM ul, unnest(ul.a) x GROUP BY g",
		"SELECT e, g, count(*) AS n FROM ul CROSS JOIN LATERAL unnest(b) AS e WHERE e <> 'b' GROUP BY e, g",
		"SELECT id, x * 10 AS y FROM ul, unnest(a) AS u(x) WHERE x > 1",
		"SELECT id, unnest(b) AS e FROM ul WHERE g <> 1",
		"SELECT g, x, count(*) AS n FROM ul JOIN LATERAL unnest(a) AS x ON x <> g GROUP BY g, x",
		"SELECT t.id, x FROM ul t LEFT JOIN LATERAL unnest(t.a) AS x ON true",
		"SELECT g, count(*) AS n, count(e) AS ne FROM ul LEFT JOIN LATERAL unnest(b) AS e ON true GROUP BY g",
	}
	var cases []*diffCase
	for i, q := range views {
		c := &diffCase{name: fmt.Sprintf("ulv%d", i), shape: "unnest", sql: q}
		cases = append(cases, c)
		d.createView(c)
	}
	for i, q := range []string{
		"SELECT t.id, u.x FROM ul t, unnest(t.a) AS u(x)",
		"SELECT t.id, u FROM ul t, unnest(t.b) u",
		"SELECT id, unnest FROM ul, unnest(a)",
		"SELECT t.id, x, y FROM ul t, unnest(t.a) AS x, unnest(t.b) AS y",
		"SELECT x, count(*) FROM ul, unnest(a) AS x GROUP BY x",
		"SELECT * FROM ul, unnest(a) AS u(x) WHERE x IS NULL",
		"SELECT id, x FROM ul CROSS JOIN LATERAL unnest(a || 7) AS x",
		"SELECT id, x FROM ul, unnest(ARRAY[1, 2]) AS x",
		"SELECT id, x FROM ul JOIN LATERAL unnest(a) AS x ON x > id % 3",
		"SELECT id, e FROM ul INNER JOIN unnest(b) AS e ON true",
		"SELECT id, x FROM ul LEFT JOIN LATERAL unnest(a) AS x ON true WHERE x IS NULL",
		"SELECT id, x FROM ul LEFT JOIN LATERAL unnest(a || 3) AS x ON TRUE",
	} {
		cases = append(cases, &diffCase{name: fmt.Sprintf("ulb%d", i), shape: "unnest", sql: q, view: viewUnsupported})
	}
	ints := func() string {
		switch rng.IntN(8) {
		case 0:
			return "NULL"
		case 1:
			return "'{}'"
		}
		parts := make([]string, 1+rng.IntN(3))
		for i := range parts {
			if rng.IntN(8) == 0 {
				parts[i] = "NULL"
			} else {
				parts[i] = fmt.Sprint(rng.IntN(5))
			}
		}
		return "'{" + strings.Join(parts, ",") + "}'"
	}
	words := []string{"a", "b", "c d", "NULL", `"x,y"`}
	texts := func() string {
		if rng.IntN(6) == 0 {
			return "NULL"
		}
		parts := make([]string, rng.IntN(3))
		for i := range parts {
			parts[i] = words[rng.IntN(len(words))]
		}
		return "'{" + strings.Join(parts, ",") + "}'"
	}
	next := 0
	var live []int
	both := func(q string) {
		d.mustExec(d.sdb, "streamdb", q)
		d.mustExec(d.pg, "PostgreSQL", q)
	}
	change := func(n int) {
		for range n {
			switch k := rng.IntN(6); {
			case k < 3 || len(live) == 0:
				next++
				live = append(live, next)
				both(fmt.Sprintf("INSERT INTO ul VALUES (%d, %d, %s, %s)", next, rng.IntN(3), ints(), texts()))
			case k < 5:
				id := live[rng.IntN(len(live))]
				both(fmt.Sprintf("UPDATE ul SET a = %s, b = %s WHERE id = %d", ints(), texts(), id))
			default:
				i := rng.IntN(len(live))
				both(fmt.Sprintf("DELETE FROM ul WHERE id = %d", live[i]))
				live = append(live[:i], live[i+1:]...)
			}
		}
	}
	checkAll := func(round int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
	}
	for round := 0; round < 3; round++ {
		change(25)
		checkAll(round)
	}
	srv.Kill9()
	srv.Restart(t)
	d.sdb = srv.Conn(t)
	checkAll(3)
	change(25)
	checkAll(4)

	for _, q := range []string{
		`SELECT '{{1,2},{3,4}}'::int[]`,
		`SELECT ' { {a} } '::text[]`,
		`SELECT ARRAY[ARRAY[1,2],ARRAY[3,4]]`,
		`INSERT INTO ul VALUES (1000, 1, '{{1},{2}}')`,
		`SELECT id, x FROM ul LEFT JOIN LATERAL unnest(a) AS x ON x > 1`, // not done
	} {
		if _, err := queryRows(d.sdb, q); code(err) != "0A000" {
			t.Errorf("%s: %v, want 0A000", q, err)
		}
		if _, err := queryRows(d.pg, q); err != nil {
			t.Errorf("%s: PostgreSQL refuses it: %v", q, err)
		}
	}
}
