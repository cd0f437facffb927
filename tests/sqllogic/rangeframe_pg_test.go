package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRangeOffsetTypesPG checks RANGE frames with an offset (n PRECEDING,
// n FOLLOWING) over the ORDER BY key types PostgreSQL has in_range for
// besides integers and floats: numeric (NUMERIC(10,2) and unconstrained,
// integer and numeric offsets, an offset with more digits than the key),
// date, timestamp, timestamptz (interval offsets with months, days and
// time) and time (only the offset's time part, no wrap at midnight), and
// GROUPS frames (offsets in peer groups),
// ascending and descending, partitioned, with NULL keys and peers. Each
// query runs as a batch query and as a materialized view over rows that
// are inserted, updated (key, partition, value) and deleted over rounds;
// both must print PostgreSQL 15's rows. Errors (negative or NULL offsets,
// offsets of the wrong type) must have PostgreSQL's SQLSTATE.
func TestRangeOffsetTypesPG(t *testing.T) {
	t.Parallel()
	d, _ := startStrictDiff(t, "CREATE TABLE rf (id INT PRIMARY KEY, g INT, v INT, n NUMERIC(10,2), u NUMERIC, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ, tm TIME)")
	rng := rand.New(rand.NewPCG(33, 2))
	frame := func(fn, order, fr string) string {
		return fmt.Sprintf("%s OVER (PARTITION BY g ORDER BY %s RANGE BETWEEN %s)", fn, order, fr)
	}
	q := func(order, fr string) string {
		return "SELECT id, " + frame("sum(v)", order, fr) + " AS s, " + frame("count(*)", order, fr) + " AS c, " +
			frame("min(id)", order, fr) + " AS lo, " + frame("max(v)", order, fr) + " AS hi FROM rf"
	}
	// GROUPS frames: offsets count peer groups.
	gq := func(order, fr string) string {
		return strings.ReplaceAll(q(order, fr), "RANGE BETWEEN", "GROUPS BETWEEN")
	}
	views := []string{
		q("n", "1.5 PRECEDING AND CURRENT ROW"),
		q("n DESC", "CURRENT ROW AND 0.75 FOLLOWING"),
		q("n", "0.005 PRECEDING AND 0.005 FOLLOWING"),
		q("u", "2 PRECEDING AND 1 FOLLOWING"),
		q("d", "INTERVAL '3 days' PRECEDING AND CURRENT ROW"),
		q("d DESC", "INTERVAL '1 month' PRECEDING AND INTERVAL '2 days' FOLLOWING"),
		q("ts", "INTERVAL '90 minutes' PRECEDING AND CURRENT ROW"),
		q("tz", "INTERVAL '1 day' PRECEDING AND INTERVAL '2 hours' FOLLOWING"),
		q("tm", "INTERVAL '10 minutes' PRECEDING AND CURRENT ROW"),
		gq("n", "1 PRECEDING AND CURRENT ROW"),
		gq("d DESC", "2 PRECEDING AND 1 FOLLOWING"),
		strings.ReplaceAll("SELECT id, "+frame("first_value(n)", "n", "1 PRECEDING AND 1 FOLLOWING")+" AS f, "+frame("nth_value(n, 2)", "n", "2 PRECEDING AND CURRENT ROW")+" AS t FROM rf", "RANGE", "GROUPS"),
		"SELECT id, " + frame("first_value(n)", "n", "1 PRECEDING AND 1 FOLLOWING") + " AS f, " + frame("last_value(d)", "d", "INTERVAL '5 days' PRECEDING AND INTERVAL '5 days' FOLLOWING") + " AS l FROM rf",
	}
	batch := []string{
		gq("tm", "CURRENT ROW AND 2 FOLLOWING"),
		gq("u", "1 FOLLOWING AND 3 FOLLOWING"),
		gq("n DESC", "3 PRECEDING AND 1 PRECEDING"),
		gq("v", "0 PRECEDING AND 0 FOLLOWING"),
		gq("ts", "UNBOUNDED PRECEDING AND CURRENT ROW"),
		gq("tz", "CURRENT ROW AND UNBOUNDED FOLLOWING"),
		"SELECT id, last_value(n) OVER (PARTITION BY g ORDER BY d, n GROUPS BETWEEN 1 PRECEDING AND 2 FOLLOWING), count(*) OVER (ORDER BY n GROUPS 2 PRECEDING) FROM rf",
		q("n", "UNBOUNDED PRECEDING AND 0.5 FOLLOWING"),
		q("n", "2 FOLLOWING AND 3.25 FOLLOWING"),
		q("u DESC", "0.5 PRECEDING AND 0.25 PRECEDING"),
		q("ts DESC", "INTERVAL '1 hour' PRECEDING AND INTERVAL '1 hour' FOLLOWING"),
		q("tz", "INTERVAL '1 mon 2 days' PRECEDING AND CURRENT ROW"),
		q("d", "CURRENT ROW AND INTERVAL '36 hours' FOLLOWING"),
		q("tm DESC", "INTERVAL '1 day 5 minutes' PRECEDING AND CURRENT ROW"),
		"SELECT id, sum(n) OVER (ORDER BY n RANGE BETWEEN 1 PRECEDING AND CURRENT ROW), max(n) OVER (ORDER BY d RANGE BETWEEN INTERVAL '1 week' PRECEDING AND CURRENT ROW) FROM rf",
	}
	cases := d.viewAndBatchCases("rf", "range offsets", views, batch)

	nextID := 0
	val := func(s string) string {
		if rng.IntN(9) == 0 {
			return "NULL"
		}
		return s
	}
	row := func() string {
		nextID++
		day := rng.IntN(60)
		return fmt.Sprintf("(%d, %d, %d, %s, %s, %s, %s, %s, %s)", nextID, rng.IntN(3), rng.IntN(100),
			val(fmt.Sprintf("%d.%02d", rng.IntN(12), rng.IntN(4)*25)),
			val(fmt.Sprintf("%d.%d", rng.IntN(8), rng.IntN(10))),
			val(fmt.Sprintf("'2026-01-01'::date + %d", day)),
			val(fmt.Sprintf("'2026-03-01 00:00'::timestamp + interval '%d minutes'", rng.IntN(600)*5)),
			val(fmt.Sprintf("'2026-01-30 12:00+00'::timestamptz + interval '%d hours'", rng.IntN(24*40))),
			val(fmt.Sprintf("'%02d:%02d'", rng.IntN(24), rng.IntN(4)*15)))
	}
	both := func(sql string) {
		d.mustExec(d.sdb, "streamdb", sql)
		d.mustExec(d.pg, "PostgreSQL", sql)
	}
	for round := 0; round < 4; round++ {
		var vals []string
		for range 40 {
			vals = append(vals, row())
		}
		both("INSERT INTO rf VALUES " + strings.Join(vals, ", "))
		if round > 0 {
			both(fmt.Sprintf("UPDATE rf SET n = n + 0.25, d = d + 1 WHERE id %% 7 = %d", round))
			both(fmt.Sprintf("UPDATE rf SET g = (g + 1) %% 3, ts = ts - interval '20 minutes' WHERE id %% 5 = %d", round))
			both(fmt.Sprintf("DELETE FROM rf WHERE id %% 11 = %d", round))
		}
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.check(c, round)
		}
	}
	sameOutcomeAsPG(t, d,
		"SELECT sum(v) OVER (ORDER BY n RANGE BETWEEN -1 PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY n RANGE BETWEEN NULL PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY tz RANGE BETWEEN CURRENT ROW AND NULL FOLLOWING) FROM rf",
		"SELECT sum(v) OVER (ORDER BY n RANGE BETWEEN 1e0 PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY d RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '-1 hour' PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY tm RANGE BETWEEN INTERVAL '-1 minute' PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY n, id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY v RANGE BETWEEN 1.5 PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY n GROUPS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY n GROUPS BETWEEN NULL PRECEDING AND CURRENT ROW) FROM rf",
		"SELECT sum(v) OVER (ORDER BY n GROUPS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM rf")
}
