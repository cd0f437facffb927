package sqllogic

import (
	"testing"
)

// TestNeAllArrayPG: x <> ALL(array) and x != ALL(array), with the array a
// column, a '{...}' literal or ARRAY[...], in a batch query and a view,
// print PostgreSQL 15's rows: false where an element equals x, NULL where
// none does but x or an element is NULL (or the array is NULL), true
// otherwise (also for an empty array, even when x is NULL). The dialect
// layer writes it x member of (array) = false, NOT of x = ANY(array).
func TestNeAllArrayPG(t *testing.T) {
	t.Parallel()
	d, _ := startStrictDiff(t, "CREATE TABLE na (id INT, x INT, a INT[], s TEXT)")
	for _, db := range []struct {
		name string
		run  func(string)
	}{{"streamdb", func(q string) { d.mustExec(d.sdb, "streamdb", q) }}, {"PostgreSQL", func(q string) { d.mustExec(d.pg, "PostgreSQL", q) }}} {
		db.run(`INSERT INTO na VALUES (1, 1, '{1,2}', 'a'), (2, 3, '{1,2}', 'b'), (3, NULL, '{1}', NULL), (4, NULL, '{}', 'c'),
			(5, 1, NULL, 'a'), (6, 5, '{1,NULL}', 'z'), (7, 1, '{1,NULL}', 'b'), (8, 2, '{}', NULL)`)
	}
	views := []string{
		"SELECT id, x <> ALL(a) AS r, x != ALL('{1,2}') AS l FROM na",
		"SELECT x <> ALL(ARRAY[1, 2]) AS r, count(*) AS c FROM na GROUP BY x <> ALL(ARRAY[1, 2])",
	}
	batch := []string{
		"SELECT id, x <> ALL(a), x != ALL(a), NOT x <> ALL(a), x + 1 <> ALL(a), x <> ALL(a) OR id > 6 FROM na",
		"SELECT id, x <> ALL('{1,2}'), x <> ALL(ARRAY[1, 2]), x <> ALL(ARRAY[1, NULL]), x <> ALL('{}'::int[]) FROM na",
		"SELECT id FROM na WHERE x <> ALL('{1,2}')",
		"SELECT id, s <> ALL('{a,b}'), s <> ALL(ARRAY['a', NULL]) FROM na",
		"SELECT id FROM na WHERE s <> ALL(ARRAY['a', 'b']) AND x <> ALL(a)",
	}
	for _, c := range d.viewAndBatchCases("na", "ne-all", views, batch) {
		d.checkNorm(c, 0, func(s string) string { return s })
	}
}
