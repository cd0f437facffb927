package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTimeArithPG checks PostgreSQL 15's arithmetic on time and timetz
// over generated values, as batch queries and materialized views: time
// and timetz ± interval (only the interval's time part moves a time of
// day, wrapping at midnight; months and days do not), interval + time,
// time - time (an interval), date + time (a timestamp), date + timetz (a
// timestamptz: the time in its zone), and time where PostgreSQL casts it
// to interval (timestamp ± time, date - time). Before, every one of these
// was refused with 0A000.
func TestTimeArithPG(t *testing.T) {
	t.Parallel()
	d, _ := startStrictDiff(t,
		"SET TimeZone = 'UTC'",
		"CREATE TABLE ta (id INT, tm TIME, tt TIMETZ, iv INTERVAL, dt DATE, ts TIMESTAMP)")
	views := []string{
		"SELECT id, tm + iv AS a, tm - iv AS b, iv + tm AS c, tt + iv AS d, tt - iv AS e FROM ta",
		"SELECT tm + interval '90 minutes' AS k, count(*) AS c FROM ta GROUP BY tm + interval '90 minutes'",
		"SELECT id, dt + tm AS a, tm + dt AS b, dt + tt AS c, ts + tm AS d, ts - tm AS e, dt - tm AS f FROM ta",
		"SELECT id, tm - time '12:00' AS a, (tm - iv) - tm AS b FROM ta WHERE tm + iv > time '06:00'",
	}
	batch := []string{
		"SELECT id, tm + iv, tm - iv, iv + tm, tt + iv, tt - iv, tm - tm, dt + tm, dt + tt, ts + tm, ts - tm, dt - tm FROM ta",
		"SELECT time '23:30' + interval '1 hour', time '00:10' - interval '1 day 20 minutes', time '10:00' + interval '1 month 2 days 3 hours'",
		"SELECT timetz '23:30+05' + interval '45 minutes', interval '2 hours' + timetz '01:00-03:30', time '24:00' - interval '1 second', time '24:00' + interval '0'",
		"SELECT date '2024-02-28' + time '23:59:59.5', date '2024-02-28' + timetz '23:00-02', date 'infinity' + time '10:00', date '-infinity' + timetz '10:00+01'",
		"SELECT time '10:00' - time '12:30:15.25', timestamp '2026-01-01 00:00' - time '00:00:01', date '2026-03-01' - time '01:00'",
		"SELECT max(tm + iv), min(tt - iv) FROM ta",
		"SELECT time '10:00' * 2, 1.5 * time '01:00', time '10:00' / 4, tm * 2, iv / 3, iv / 2.5, iv * 0.5 FROM ta",
	}
	cases := d.viewAndBatchCases("ta", "time arithmetic", views, batch)

	rng := rand.New(rand.NewPCG(7, 1083))
	ivs := []string{"1 hour", "-90 minutes", "1 day", "1 mon 2 days 03:04:05.5", "25:00:00", "-1 day -00:00:01", "00:00:00.000001", "0"}
	zones := []string{"+00", "+05:30", "-03", "+15:59", "-12"}
	id := 0
	row := func() string {
		id++
		us := rng.Int64N(86400e6)
		if rng.IntN(8) == 0 {
			us = []int64{0, 86400e6, 86399999999}[rng.IntN(3)]
		}
		tm := fmt.Sprintf("%02d:%02d:%02d.%06d", us/3600e6, us/60e6%60, us/1e6%60, us%1e6)
		null := func(s string) string {
			if rng.IntN(10) == 0 {
				return "NULL"
			}
			return s
		}
		return fmt.Sprintf("(%d, %s, %s, %s, %s, %s)", id,
			null("'"+tm+"'"), null("'"+tm+zones[rng.IntN(len(zones))]+"'"), null("'"+ivs[rng.IntN(len(ivs))]+"'"),
			null(fmt.Sprintf("date '2026-01-01' + %d", rng.IntN(800)-400)),
			null(fmt.Sprintf("timestamp '2026-01-01' + interval '%d seconds'", rng.Int64N(1e8)-5e7)))
	}
	for round := 0; round < 3; round++ {
		rows := make([]string, 25)
		for i := range rows {
			rows[i] = row()
		}
		ins := "INSERT INTO ta VALUES " + strings.Join(rows, ", ")
		d.mustExec(d.sdb, "streamdb", ins)
		d.mustExec(d.pg, "PostgreSQL", ins)
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
	}
	// What PostgreSQL has no operator for stays refused with its SQLSTATE.
	for _, q := range []string{"SELECT timetz '10:00+01' - timetz '09:00+01'", "SELECT time '10:00' + time '01:00'", "SELECT timetz '10:00+01' * 2", "SELECT interval '1 hour' / 0"} {
		_, errS := queryRows(d.sdb, q)
		_, errP := queryRows(d.pg, q)
		if sqlstate(errS) != sqlstate(errP) || errP == nil {
			t.Errorf("%s: streamdb %v, PostgreSQL %v", q, errS, errP)
		}
	}
}
