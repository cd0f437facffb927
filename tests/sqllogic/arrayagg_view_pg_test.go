package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// arrayLiteral is an array's text in a result row ('{...}').
var arrayLiteral = regexp.MustCompile(`\{[^{}]*\}`)

// sortArrayElems sorts the elements of each array in a row, so arrays
// compare as multisets (array_agg without ORDER BY has no defined order in
// PostgreSQL). The test's elements have no commas, quotes or braces.
func sortArrayElems(row string) string { return sortElems(row, arrayLiteral, ",") }

// sortElems sorts the elements, separated by sep, of each bracketed
// literal re matches in row.
func sortElems(row string, re *regexp.Regexp, sep string) string {
	return re.ReplaceAllStringFunc(row, func(a string) string {
		e := strings.Split(a[1:len(a)-1], sep)
		slices.Sort(e)
		return a[:1] + strings.Join(e, sep) + a[len(a)-1:]
	})
}

// TestArrayAggViewPG: array_agg(x) over int, text, date, float8 and bool columns with
// NULLs, in materialized views over a keyed table that rounds of INSERT,
// UPDATE (of the grouping key too) and DELETE change, equals PostgreSQL
// 15's as a multiset in every round, in the batch query and in the view,
// also after a kill -9 and restart. The view's elements are, moreover, in
// the order it documents: ascending, NULLs last, which is PostgreSQL's
// array_agg(x ORDER BY x) under the C locale the oracle runs with.
func TestArrayAggViewPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t, "CREATE TABLE aa (id int PRIMARY KEY, g int, i int, s text, d date, f float8, b bool)")
	views := []string{
		"SELECT g, array_agg(i) FROM aa GROUP BY g",
		"SELECT g, array_agg(s) AS s, array_agg(d) AS d, count(*) FROM aa GROUP BY g",
		"SELECT array_agg(i) AS i, array_agg(s) AS s FROM aa WHERE g IS NOT NULL",
		"SELECT g, array_agg(d) FROM aa WHERE i > 20 GROUP BY g",
		"SELECT g, array_agg(f) AS f, array_agg(b) AS b FROM aa GROUP BY g",
	}
	cases := d.viewAndBatchCases("aagg", "array_agg", views, nil)
	// ordered is each view's query with the order the view documents.
	ordered := make([]string, len(views))
	for i, q := range views {
		for _, col := range []string{"i", "s", "d", "f", "b"} {
			q = strings.ReplaceAll(q, "array_agg("+col+")", "array_agg("+col+" ORDER BY "+col+")")
		}
		ordered[i] = q
	}
	rng := rand.New(rand.NewPCG(12, 7))
	ch := &churn{d: d, table: "aa", cols: []string{"g", "i", "s", "d", "f", "b"}, rng: rng}
	checkAll := func(r int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for i, c := range cases {
			d.checkNorm(c, r, sortArrayElems)
			want, err := queryRows(d.pg, ordered[i])
			if err != nil {
				t.Fatalf("PostgreSQL rejects %s: %v", ordered[i], err)
			}
			got, err := queryRows(d.sdb, "SELECT * FROM "+c.name)
			if err != nil {
				t.Fatalf("round %d: view %s: %v", r, c.name, err)
			}
			if diff := diffRows(got, want); diff != "" {
				t.Errorf("round %d: view %s is not in ascending order, NULLs last\n  query: %s\n%s", r, c.name, ordered[i], diff)
			}
		}
	}
	ch.run(t, srv, 4, 2, checkAll)
}

// churn changes a keyed table (id int PRIMARY KEY, then cols) alike in
// streamdb and PostgreSQL: each round inserts 25 rows of values from val,
// updates a random column of 8 live rows and deletes 6 of them.
type churn struct {
	d     *diffRun
	table string
	cols  []string
	rng   *rand.Rand
	next  int
	live  []int
}

// val is a random value of column col (NULL one time in six): g 0-3,
// i -10-49, f quarters in -5-4.75, b a boolean, s a letter a-e and a digit
// 0-2, d a date of 2026.
func (c *churn) val(col string) string {
	rng := c.rng
	if rng.IntN(6) == 0 {
		return "NULL"
	}
	switch col {
	case "g":
		return fmt.Sprint(rng.IntN(4))
	case "i":
		return fmt.Sprint(rng.IntN(60) - 10)
	case "f":
		return fmt.Sprintf("%g", float64(rng.IntN(40)-20)/4)
	case "b":
		return fmt.Sprint(rng.IntN(2) == 0)
	case "s":
		return fmt.Sprintf("'%c%d'", 'a'+rune(rng.IntN(5)), rng.IntN(3))
	}
	return fmt.Sprintf("DATE '2026-%02d-%02d'", 1+rng.IntN(12), 1+rng.IntN(28))
}

func (c *churn) exec(q string) {
	c.d.mustExec(c.d.sdb, "streamdb", q)
	c.d.mustExec(c.d.pg, "PostgreSQL", q)
}

func (c *churn) round() {
	var rows []string
	for range 25 {
		vals := []string{fmt.Sprint(c.next)}
		for _, col := range c.cols {
			vals = append(vals, c.val(col))
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
		c.live = append(c.live, c.next)
		c.next++
	}
	c.exec("INSERT INTO " + c.table + " VALUES " + strings.Join(rows, ", "))
	for range 8 {
		id := c.live[c.rng.IntN(len(c.live))]
		col := c.cols[c.rng.IntN(len(c.cols))]
		c.exec(fmt.Sprintf("UPDATE %s SET %s = %s WHERE id = %d", c.table, col, c.val(col), id))
	}
	for range 6 {
		k := c.rng.IntN(len(c.live))
		c.exec(fmt.Sprintf("DELETE FROM %s WHERE id = %d", c.table, c.live[k]))
		c.live = slices.Delete(c.live, k, k+1)
	}
}

// run checks after each of before rounds, kills the server (kill -9),
// restarts it and checks, checks after each of after more rounds, then
// deletes every row (the groups go, a global aggregate is NULL) and
// checks; check gets the round's number.
func (c *churn) run(t *testing.T, srv *Server, before, after int, check func(r int)) {
	r := 0
	for ; r < before; r++ {
		c.round()
		check(r)
	}
	srv.Kill9()
	srv.Restart(t)
	c.d.sdb = srv.Conn(t)
	check(r)
	for range after {
		r++
		c.round()
		check(r)
	}
	c.exec("DELETE FROM " + c.table)
	check(r + 1)
}
