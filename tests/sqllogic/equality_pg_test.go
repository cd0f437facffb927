package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestEqualityKeysPG checks that every equality-based operator agrees with
// = for the values whose bytes differ while = holds: intervals ('24:00:00'
// = '1 day', '30 days' = '1 mon'), floats (-0 = 0, NaN = NaN) and NUMERIC
// of different scales, against PostgreSQL 15, as batch queries and as
// materialized views after a CHECKPOINT. Which of equal values a GROUP BY
// or DISTINCT outputs differs by design (streamdb: a representative,
// exec/keycanon.go; PostgreSQL: the first seen), so interval and float
// output is compared as a canonical text form (normEqual).
//
// The second round runs after a restart, so the views' state keys are
// read back from storage. It also checks IS [NOT] DISTINCT FROM and
// string_agg(...) FILTER (a batch query: its order is the rows' arrival order,
// which a view, sorting by the value, does not keep).
func TestEqualityKeysPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t,
		"CREATE TABLE ek (k INT, v INTERVAL, f FLOAT8, n NUMERIC(10,3), m NUMERIC(10,1))",
		"CREATE TABLE ek2 (k INT, v INTERVAL, f FLOAT8, n NUMERIC(10,2))")
	queries := []string{
		"SELECT DISTINCT v FROM ek",
		"SELECT v, count(*), sum(k) FROM ek GROUP BY v",
		"SELECT count(*) FROM ek a JOIN ek b ON a.v = b.v",
		"SELECT a.k AS ak, b.k AS bk FROM ek a JOIN ek2 b ON a.v = b.v",
		"SELECT a.k AS ak, b.k AS bk FROM ek a LEFT JOIN ek2 b ON a.f = b.f",
		"SELECT count(DISTINCT v) AS cv, count(DISTINCT f) AS cf, count(DISTINCT n) AS cn FROM ek",
		"SELECT k, count(DISTINCT v) FROM ek GROUP BY k",
		"SELECT v FROM ek UNION SELECT v FROM ek2",
		"SELECT k FROM ek WHERE v IN (SELECT v FROM ek2)",
		"SELECT k FROM ek WHERE v IN (INTERVAL '1 day', INTERVAL '1 mon')",
		"SELECT k FROM ek WHERE f NOT IN (SELECT f FROM ek2 WHERE f IS NOT NULL)",
		"SELECT DISTINCT f FROM ek",
		"SELECT f, count(*) FROM ek GROUP BY f",
		"SELECT count(*) FROM ek a JOIN ek b ON a.f = b.f",
		"SELECT DISTINCT n FROM ek",
		"SELECT n, count(*) FROM ek GROUP BY n",
		"SELECT count(*) FROM ek a JOIN ek b ON a.n = b.m",
		"SELECT count(*) FROM ek a JOIN ek2 b ON a.n = b.n",
		"SELECT n FROM ek UNION SELECT n FROM ek2",
		"SELECT v, k FROM (SELECT v, k, row_number() OVER (PARTITION BY v ORDER BY k) AS r FROM ek) x WHERE r = 1",
		"SELECT k, v IS DISTINCT FROM INTERVAL '1 day' AS a, v IS NOT DISTINCT FROM INTERVAL '24 hours' AS b, f IS DISTINCT FROM NULL AS c FROM ek",
		"SELECT count(*) FROM ek a JOIN ek2 b ON a.k IS NOT DISTINCT FROM b.k",
		"SELECT 1 IS NOT DISTINCT FROM 2, 1 IS DISTINCT FROM 2, NULL IS DISTINCT FROM NULL, NULL::int IS NOT DISTINCT FROM 1",
		"SELECT string_agg(k::text, ',') FILTER (WHERE f > 0), count(*) FILTER (WHERE v IS DISTINCT FROM INTERVAL '1 day') FROM ek",
	}
	var cases []*diffCase
	for i, q := range queries {
		c := &diffCase{name: fmt.Sprintf("eqv%d", i), shape: "equality", sql: q}
		cases = append(cases, c)
		if !strings.Contains(q, "string_agg") && !strings.Contains(q, "FROM ek a LEFT") && !strings.HasPrefix(q, "SELECT 1 ") {
			d.createView(c)
		}
	}
	ivs := []string{"'24 hours'", "'1 day'", "'30 days'", "'1 mon'", "'-1 day +25 hours'", "'01:00:00'", "'720 hours'", "'1 mon -1 day'", "'29 days 24:00:00'", "NULL"}
	fls := []string{"'-0'", "'0'", "'NaN'", "'Infinity'::float8 - 'Infinity'::float8", "1.5", "NULL"}
	nums := []string{"1", "1.0", "1.00", "-0.0", "0", "2.5", "2.50", "NULL"}
	rng := rand.New(rand.NewPCG(7, 7))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	for round := 0; round < 2; round++ {
		if round > 0 {
			// The views' state keys must hold across a restart.
			srv.Restart(t)
			d.sdb = srv.Conn(t)
		}
		var a, b []string
		for i := 0; i < 12; i++ {
			a = append(a, fmt.Sprintf("(%d, %s, %s, %s, %s)", i, pick(ivs), pick(fls), pick(nums), pick(nums)))
			b = append(b, fmt.Sprintf("(%d, %s, %s, %s)", i, pick(ivs), pick(fls), pick(nums)))
		}
		for _, ins := range []string{"INSERT INTO ek VALUES " + strings.Join(a, ", "), "INSERT INTO ek2 VALUES " + strings.Join(b, ", ")} {
			d.mustExec(d.sdb, "streamdb", ins)
			d.mustExec(d.pg, "PostgreSQL", ins)
		}
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, normEqual)
		}
	}
}

var (
	intervalText = regexp.MustCompile(`'(-?\d+ (years?|mons?|days?) ?)*(-?\d+:\d\d:\d\d(\.\d+)?)?'`)
	negZero      = regexp.MustCompile(`'-0'`)
	numericText  = regexp.MustCompile(`'(-?\d+)\.(\d*?)0*'`)
)

// normEqual rewrites a result row so that equal values print alike: an
// interval as its span in seconds (a month of 30 days), -0 as 0, a
// NUMERIC without trailing fraction zeros (PostgreSQL prints the scale of
// the first value of a group seen; the display scale is
// TestNumericScalePG's).
func normEqual(row string) string {
	row = negZero.ReplaceAllString(row, "'0'")
	row = numericText.ReplaceAllStringFunc(row, func(s string) string {
		m := numericText.FindStringSubmatch(s)
		if m[2] == "" {
			return "'" + m[1] + "'"
		}
		return "'" + m[1] + "." + m[2] + "'"
	})
	return intervalText.ReplaceAllStringFunc(row, func(s string) string {
		var days, secs int64
		fields := strings.Fields(strings.Trim(s, "'"))
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			if strings.Contains(f, ":") {
				neg := strings.HasPrefix(f, "-")
				var h, m, sec int64
				fmt.Sscanf(strings.TrimPrefix(f, "-"), "%d:%d:%d", &h, &m, &sec)
				v := h*3600 + m*60 + sec
				if neg {
					v = -v
				}
				secs += v
				continue
			}
			var n int64
			fmt.Sscan(f, &n)
			i++
			if strings.HasPrefix(fields[i], "mon") {
				n *= 30
			} else if strings.HasPrefix(fields[i], "year") {
				n *= 360
			}
			days += n
		}
		return fmt.Sprintf("'span %ds'", days*86400+secs)
	})
}

// checkNorm is check with both results passed through norm.
func (d *diffRun) checkNorm(c *diffCase, round int, norm func(string) string) {
	want, err := queryRows(d.pg, c.sql)
	if err != nil {
		d.t.Fatalf("PostgreSQL rejects %s: %v", c.sql, err)
	}
	for i := range want {
		want[i] = norm(want[i])
	}
	got, err := queryRows(d.sdb, c.sql)
	if err != nil {
		d.t.Errorf("round %d: batch query failed: %v\n  query: %s", round, err, c.sql)
	} else if diff := diffRows(normAll(got, norm), want); diff != "" {
		d.t.Errorf("round %d: WRONG RESULT of batch query\n  query: %s\n%s", round, c.sql, diff)
	}
	if c.view != viewLive {
		return
	}
	got, err = queryRows(d.sdb, "SELECT * FROM "+c.name)
	if err != nil {
		d.t.Errorf("round %d: view %s failed: %v\n  query: %s", round, c.name, err, c.sql)
	} else if diff := diffRows(normAll(got, norm), want); diff != "" {
		d.t.Errorf("round %d: WRONG RESULT in materialized view %s\n  query: %s\n%s", round, c.name, c.sql, diff)
	}
}

// startStrictDiff starts a private PostgreSQL and a streamdb server for a
// strict differential test and runs each of ddl on both.
func startStrictDiff(t *testing.T, ddl ...string) (*diffRun, *Server) {
	t.Helper()
	pg := StartPG(t)
	srv := StartServer(t, "")
	d := &diffRun{t: t, sdb: srv.Conn(t), pg: pg.Conn(t), strict: true, logged: map[string]bool{}}
	for _, q := range ddl {
		d.mustExec(d.sdb, "streamdb", q)
		d.mustExec(d.pg, "PostgreSQL", q)
	}
	return d, srv
}

// viewAndBatchCases makes a case of each query: views (named prefix+"v"+i)
// are created as materialized views too, batch ones run as batch queries only.
func (d *diffRun) viewAndBatchCases(prefix, shape string, views, batch []string) []*diffCase {
	var cases []*diffCase
	for i, q := range views {
		c := &diffCase{name: fmt.Sprintf("%sv%d", prefix, i), shape: shape, sql: q}
		cases = append(cases, c)
		d.createView(c)
	}
	for i, q := range batch {
		cases = append(cases, &diffCase{name: fmt.Sprintf("%sb%d", prefix, i), shape: shape, sql: q, view: viewUnsupported})
	}
	return cases
}

func normAll(rows []string, norm func(string) string) []string {
	for i := range rows {
		rows[i] = norm(rows[i])
	}
	return rows
}

// TestJSONBKeysPG: jsonb values whose numbers differ only in scale or
// spelling (1, 1.0, 1.00, 1e0, 10e-1, at any depth) are = in PostgreSQL,
// so GROUP BY, DISTINCT, COUNT(DISTINCT), UNION, joins and top-N
// partitions make them one key, as batch queries and as materialized
// views, also after a restart (the views' state keys read back). A group
// of mixed spellings prints its key form in streamdb (numbers without
// trailing fractional zeros) and the first value seen in PostgreSQL, so
// such output is compared with numbers normalised (normJSONBNumbers); the
// top-N output is the row's own value and compared as printed.
func TestJSONBKeysPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t,
		"CREATE TABLE jk (k INT, j JSONB)",
		"CREATE TABLE jk2 (k INT, j JSONB)")
	views := []string{
		"SELECT DISTINCT j FROM jk",
		"SELECT j, count(*), sum(k) FROM jk GROUP BY j",
		"SELECT count(DISTINCT j) FROM jk",
		"SELECT k % 3 AS m, count(DISTINCT j) FROM jk GROUP BY k % 3",
		"SELECT count(*) FROM jk a JOIN jk b ON a.j = b.j",
		"SELECT a.k AS ak, b.k AS bk FROM jk a JOIN jk2 b ON a.j = b.j",
		"SELECT j -> 'a' AS a, count(*) FROM jk GROUP BY j -> 'a'",
		"SELECT j, k FROM (SELECT j, k, row_number() OVER (PARTITION BY j ORDER BY k) AS r FROM jk) x WHERE r = 1",
		"SELECT j FROM jk UNION SELECT j FROM jk2",
	}
	batch := []string{
		"SELECT k, count(*) OVER (PARTITION BY j) AS c FROM jk",
		"SELECT k FROM jk WHERE j IN (SELECT j FROM jk2)",
	}
	cases := d.viewAndBatchCases("jk", "jsonbkeys", views, batch)
	vals := []string{"'1'", "'1.0'", "'1.00'", "'1e0'", "'10e-1'", "'2.50'", "'2.5'",
		`'{"a": 1}'`, `'{"a": 1.0}'`, `'{"a": 10e-1, "b": [2.50, 3]}'`, `'{"b": [2.5, 3.0], "a": 1e0}'`,
		`'[1, 1.0]'`, `'[1.00, 1]'`, `'[{"x": 0.10}]'`, `'[{"x": 0.1}]'`, `'"1.0"'`, "NULL"}
	rng := rand.New(rand.NewPCG(11, 3))
	pick := func() string { return vals[rng.IntN(len(vals))] }
	for round := 0; round < 2; round++ {
		if round > 0 {
			srv.Restart(t)
			d.sdb = srv.Conn(t)
		}
		var a, b []string
		for i := 0; i < 24; i++ {
			a = append(a, fmt.Sprintf("(%d, %s)", round*100+i, pick()))
			b = append(b, fmt.Sprintf("(%d, %s)", round*100+i, pick()))
		}
		for _, ins := range []string{"INSERT INTO jk VALUES " + strings.Join(a, ", "), "INSERT INTO jk2 VALUES " + strings.Join(b, ", ")} {
			d.mustExec(d.sdb, "streamdb", ins)
			d.mustExec(d.pg, "PostgreSQL", ins)
		}
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for i, c := range cases {
			norm := normJSONBNumbers
			if i == 7 { // top-N: each row's own value
				norm = func(s string) string { return s }
			}
			d.checkNorm(c, round, norm)
		}
	}
	// One spelling per value: DISTINCT prints exactly what PostgreSQL does.
	one := "SELECT DISTINCT j FROM (VALUES ('{\"a\": 1}'::jsonb), ('[2.5, \"x\"]'), ('{\"a\": 1}'), ('null'), ('[2.5, \"x\"]')) v(j)"
	d.checkNorm(&diffCase{name: "jkone", shape: "jsonbkeys", sql: one, view: viewUnsupported}, 0, func(s string) string { return s })
}

var jsonbFraction = regexp.MustCompile(`(\d+)\.(\d*?)0*(\D)`)

// normJSONBNumbers rewrites the numbers in a result row without trailing
// fractional zeros (1.0 → 1, 2.50 → 2.5).
func normJSONBNumbers(row string) string {
	return jsonbFraction.ReplaceAllStringFunc(row, func(s string) string {
		m := jsonbFraction.FindStringSubmatch(s)
		if m[2] == "" {
			return m[1] + m[3]
		}
		return m[1] + "." + m[2] + m[3]
	})
}
