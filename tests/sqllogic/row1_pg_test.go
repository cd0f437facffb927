package sqllogic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestRowOneFieldPG checks ROW(x) with a single field, which TiDB's
// grammar refuses and the dialect layer rewrites: a one-field record as in
// PostgreSQL 15, printed `(x)`, compared field by field (=, <, IN, IS
// NULL), cast to a one-field composite type, inserted into a composite
// column, as a GROUP BY and DISTINCT key, nested, in batch queries and
// materialized views over rows inserted, updated and deleted in rounds.
func TestRowOneFieldPG(t *testing.T) {
	t.Parallel()
	d, _ := startStrictDiff(t,
		"CREATE TYPE one AS (x INT)",
		"CREATE TABLE r1 (id INT PRIMARY KEY, a INT, t TEXT, o one)")
	rng := rand.New(rand.NewPCG(33, 3))
	views := []string{
		"SELECT ROW(a) AS r, count(*) AS c FROM r1 GROUP BY ROW(a)",
		"SELECT id, ROW(a) AS r, ROW(t) AS s, ROW(a)::one AS o FROM r1 WHERE ROW(a) > ROW(2)",
		"SELECT id, o FROM r1 WHERE o = ROW(a)::one",
		"SELECT DISTINCT ROW(t) AS r FROM r1",
	}
	batch := []string{
		"SELECT ROW(1), ROW('a'), ROW(NULL), ROW(1.50), ROW(ROW(2)), ROW((1, 'x')), ROW(ARRAY[1,2])",
		"SELECT id, ROW(a), ROW(t), ROW(a + 1), ROW(a) = ROW(1), ROW(a) <> ROW(3), ROW(a) < ROW(5), ROW(a) IS NULL, ROW(a) IS NOT NULL FROM r1",
		"SELECT id FROM r1 WHERE ROW(a) IN (ROW(1), ROW(2))",
		"SELECT id, ROW(a)::one, (ROW(a)::one).x, o = ROW(a)::one, o IS NULL FROM r1",
		"SELECT id FROM r1 WHERE o = ROW(3)::one",
		"SELECT ROW(t), count(*) FROM r1 GROUP BY ROW(t)",
		"SELECT id, ROW(a) FROM r1 ORDER BY ROW(a), id",
		"SELECT x.id, y.id FROM r1 x JOIN r1 y ON ROW(x.a) = ROW(y.a) WHERE x.id < y.id",
		"SELECT ROW(o) FROM r1",
		"SELECT ROW(1) = ROW(NULL::int), ROW(NULL::int) IS NULL, ROW(1)::one, CAST(ROW(7) AS one)",
	}
	cases := d.viewAndBatchCases("r1", "row(x)", views, batch)
	nextID := 0
	both := func(sql string) {
		d.mustExec(d.sdb, "streamdb", sql)
		d.mustExec(d.pg, "PostgreSQL", sql)
	}
	for round := 0; round < 3; round++ {
		var vals []string
		for range 15 {
			nextID++
			a, tx, o := "NULL", "NULL", "NULL"
			if rng.IntN(6) > 0 {
				a = fmt.Sprint(rng.IntN(6))
			}
			if rng.IntN(6) > 0 {
				tx = fmt.Sprintf("'t%d'", rng.IntN(4))
			}
			switch rng.IntN(4) {
			case 0:
				o = fmt.Sprintf("ROW(%d)", rng.IntN(6))
			case 1:
				o = fmt.Sprintf("'(%d)'", rng.IntN(6))
			case 2:
				o = "ROW(NULL)"
			}
			vals = append(vals, fmt.Sprintf("(%d, %s, %s, %s)", nextID, a, tx, o))
		}
		both("INSERT INTO r1 VALUES " + strings.Join(vals, ", "))
		if round > 0 {
			both(fmt.Sprintf("UPDATE r1 SET o = ROW(a + 1) WHERE id %% 4 = %d", round))
			both(fmt.Sprintf("DELETE FROM r1 WHERE id %% 5 = %d", round))
		}
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.check(c, round)
		}
	}
	// Column names, as PostgreSQL's: row, x.
	q := "SELECT ROW(1), ROW(1, 2), (1, 2), ROW(1)::text, (ROW(1)::one).x, ROW(a) = ROW(1) FROM r1 LIMIT 0"
	if got, want := colNames(t, d.sdb, q), colNames(t, d.pg, q); got != want {
		t.Errorf("%s: columns %q, want %q", q, got, want)
	}
	sameOutcomeAsPG(t, d,
		"SELECT ROW(1)::one, ROW(1, 2)::one",
		"SELECT ROW('x')::one",
		"SELECT ROW(1) = ROW(1, 2)",
		"SELECT ROW(1) < ROW('a'::text)")
}

// colNames is the names of q's result columns, separated by spaces.
func colNames(t *testing.T, c *pgx.Conn, q string) string {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var names []string
	for _, f := range rows.FieldDescriptions() {
		names = append(names, f.Name)
	}
	return strings.Join(names, " ")
}
