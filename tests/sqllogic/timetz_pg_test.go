package sqllogic

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestTimeTZPG checks time with time zone (timetz) against PostgreSQL 15
// over generated values: the same rows go into both by INSERT, COPY text,
// COPY CSV and binary COPY (each value in one of the input forms
// PostgreSQL accepts: numeric offsets of every width, Z, UTC, none), then
// batch queries (casts to and from text, time and timestamptz; comparison,
// which orders by the UTC-equivalent time and then the zone, so equal
// instants at different offsets are not equal; GROUP BY, DISTINCT, joins,
// min/max) and materialized views (timetz as a GROUP BY key, under
// min/max, in a filter) must print the same rows; the binary result
// format, COPY TO binary, the RowDescription and the catalogs must be
// byte-identical, as must rows inserted with binary parameters (oid 1266).
// Bad input gets PostgreSQL's SQLSTATE. Last, a kill -9 and restart: the
// views keep their state and go on with new rows.
func TestTimeTZPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t, "CREATE TABLE tz (id INT, g INT, tt TIMETZ, tm TIME)")
	rng := rand.New(rand.NewPCG(30, 1266))

	views := []string{
		"SELECT tt, count(*) AS c, min(id) AS lo FROM tz GROUP BY tt",
		"SELECT g, min(tt) AS lo, max(tt) AS hi, count(tt) AS c, count(DISTINCT tt) AS d FROM tz GROUP BY g",
		"SELECT id, tt, tt::text AS t, tt::time AS l FROM tz WHERE tt > '12:00+00'",
		"SELECT tt::time AS l, g, count(*) AS c FROM tz WHERE tt IS NOT NULL GROUP BY tt::time, g",
	}
	batch := []string{
		"SELECT id, g, tt, tm FROM tz",
		"SELECT id, tt::text, tt::time, tt::varchar(9), tm::timetz, tt = tm, tt < tm FROM tz",
		"SELECT tt, count(*) FROM tz GROUP BY tt",
		"SELECT DISTINCT tt FROM tz",
		"SELECT min(tt), max(tt), count(DISTINCT tt) FROM tz",
		"SELECT count(*) FROM tz x, tz y WHERE x.tt < y.tt",
		"SELECT count(*) FROM tz x, tz y WHERE x.tt = y.tt",
		"SELECT count(*) FROM tz x, tz y WHERE x.tt::time = y.tt::time AND x.tt <> y.tt",
		"SELECT x.id, y.id FROM tz x JOIN tz y ON x.tt = y.tt WHERE x.id < y.id",
		"SELECT id, tt FROM tz ORDER BY tt DESC NULLS LAST, id LIMIT 9",
		"SELECT id, tt FROM tz ORDER BY tt NULLS FIRST, id",
		"SELECT id FROM tz WHERE tt IN ('00:00+00', '12:00:00-05', '24:00:00+15:59') OR tt BETWEEN '06:00+00' AND '06:30+00'",
		"SELECT COALESCE(tt, '01:02:03+04'), CASE WHEN g > 1 THEN tt END FROM tz",
		"SELECT tt FROM tz UNION SELECT '12:00+01'::timetz",
		"SELECT tm FROM tz UNION SELECT '12:00+01'::timetz",
		"SELECT '04:05:06.789+02'::timetz, '4:05 PM -0530'::timetz, '12:00 am Z'::timetz, '2003-04-12 04:05:06 -03:30:15'::timetz, '24:00+15:59:59'::timetz, '00:00-15:59'::timetz, 'allballs'::timetz, '23:59:59.9999999+01'::timetz, '1:2:3 UTC'::timetz, '12:00'::timetz",
		"SELECT TIME WITH TIME ZONE '04:05:06+01', timetz '13:14 -01', CAST('12:00+00' AS time with time zone), '12:00+01'::timetz = '11:00+00'::timetz, '12:00+01'::timetz < '11:00+00'::timetz, '11:00+00'::timetz < '12:00+01'::timetz",
		"SELECT '2026-01-02 03:04:05.25+00'::timestamptz::timetz, '13:14'::time::timetz, '13:14+05'::timetz::time, 'infinity'::timestamptz::timetz",
	}
	cases := d.viewAndBatchCases("tz", "timetz", views, batch)

	tpool := []int64{0, 86400e6, 12 * 3600e6, 45296789012, 3723e6, 6*3600e6 + 15*60e6, 86399999999, 1}
	for i := 0; i < 6; i++ {
		tpool = append(tpool, rng.Int64N(86400e6))
	}
	// Zones east of UTC in seconds: same instants at several offsets.
	zpool := []int64{0, 3600, -3600, 5*3600 + 1800, -(3*3600 + 30*60), 57599, -57599, 12 * 3600, 7*3600 + 15*60 + 30}
	type val struct{ us, east int64 }
	pick := func() val {
		v := val{tpool[rng.IntN(len(tpool))], zpool[rng.IntN(len(zpool))]}
		if rng.IntN(4) == 0 { // the same UTC instant as 12:00+00 at another offset
			us := 12*3600e6 + v.east*1e6
			if us >= 0 && us <= 86400e6 {
				v.us = us
			}
		}
		return v
	}
	nextID := 0
	type row struct {
		g      int
		tt     *val
		tm     string
		ttText string
	}
	gen := func(n int) []row {
		out := make([]row, n)
		for i := range out {
			r := row{g: rng.IntN(4)}
			if rng.IntN(8) > 0 {
				v := pick()
				r.tt, r.ttText = &v, timetzInput(rng, v.us, v.east)
			}
			if rng.IntN(8) > 0 {
				r.tm = timeInput(rng, tpool[rng.IntN(len(tpool))])
			}
			out[i] = r
		}
		return out
	}
	ingest := func(round int, rows []row) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var b strings.Builder
		lit := func(s string) string {
			if s == "" {
				return "NULL"
			}
			return "'" + s + "'"
		}
		switch round % 4 {
		case 0:
			var vals []string
			for _, r := range rows {
				nextID++
				vals = append(vals, fmt.Sprintf("(%d, %d, %s, %s)", nextID, r.g, lit(r.ttText), lit(r.tm)))
			}
			ins := "INSERT INTO tz VALUES " + strings.Join(vals, ", ")
			d.mustExec(d.sdb, "streamdb", ins)
			d.mustExec(d.pg, "PostgreSQL", ins)
			return
		case 1:
			for _, r := range rows {
				nextID++
				f := func(s string) string {
					if s == "" {
						return `\N`
					}
					return s
				}
				fmt.Fprintf(&b, "%d\t%d\t%s\t%s\n", nextID, r.g, f(r.ttText), f(r.tm))
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY tz FROM STDIN"); err != nil {
					t.Fatalf("COPY text: %v", err)
				}
			}
		case 2:
			for _, r := range rows {
				nextID++
				f := func(s string) string {
					if s != "" && rng.IntN(2) == 0 {
						s = `"` + s + `"`
					}
					return s
				}
				fmt.Fprintf(&b, "%d,%d,%s,%s\n", nextID, r.g, f(r.ttText), f(r.tm))
			}
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, strings.NewReader(b.String()), "COPY tz FROM STDIN (FORMAT csv)"); err != nil {
					t.Fatalf("COPY csv: %v", err)
				}
			}
		case 3: // binary COPY: int4, int4, timetz (int64 µs, int32 zone west), time (int64 µs)
			var buf []byte
			buf = append(buf, "PGCOPY\n\xff\r\n\x00"...)
			buf = binary.BigEndian.AppendUint32(buf, 0)
			buf = binary.BigEndian.AppendUint32(buf, 0)
			for _, r := range rows {
				nextID++
				buf = binary.BigEndian.AppendUint16(buf, 4)
				buf = binary.BigEndian.AppendUint32(buf, 4)
				buf = binary.BigEndian.AppendUint32(buf, uint32(nextID))
				buf = binary.BigEndian.AppendUint32(buf, 4)
				buf = binary.BigEndian.AppendUint32(buf, uint32(r.g))
				if r.tt == nil {
					buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
				} else {
					buf = binary.BigEndian.AppendUint32(buf, 12)
					buf = binary.BigEndian.AppendUint64(buf, uint64(r.tt.us))
					buf = binary.BigEndian.AppendUint32(buf, uint32(int32(-r.tt.east)))
				}
				buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF) // tm NULL
			}
			buf = binary.BigEndian.AppendUint16(buf, 0xFFFF)
			for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
				if _, err := c.CopyFrom(ctx, bytes.NewReader(buf), "COPY tz FROM STDIN (FORMAT binary)"); err != nil {
					t.Fatalf("COPY binary: %v", err)
				}
			}
		}
	}
	checkAll := func(round int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
	}
	for round := 0; round < 4; round++ {
		ingest(round, gen(20))
		checkAll(round)
	}
	binaryAndCatalogsMatchPG(t, d,
		"SELECT id, tt, tt::time, tm::timetz, max(tt) OVER () FROM tz ORDER BY id",
		"SELECT attname, format_type(atttypid, atttypmod), atttypid FROM pg_attribute WHERE attrelid = 'tz'::regclass AND attnum > 0",
		"SELECT column_name, data_type, udt_name, datetime_precision FROM information_schema.columns WHERE table_name = 'tz'",
		"SELECT oid, typname, typlen, typcategory FROM pg_type WHERE typname IN ('timetz', 'time')")
	// COPY TO binary, byte for byte.
	var out [2]bytes.Buffer
	for i, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
		if _, err := c.CopyTo(context.Background(), &out[i], "COPY (SELECT id, tt FROM tz ORDER BY id) TO STDOUT (FORMAT binary)"); err != nil {
			t.Fatalf("COPY TO binary: %v", err)
		}
	}
	if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
		t.Errorf("COPY TO binary differs: %d bytes, PostgreSQL %d", out[0].Len(), out[1].Len())
	}
	timetzErrors(t, d)
	// Binary parameters through the extended protocol (oid 1266).
	for i := 0; i < 5; i++ {
		v := pick()
		p := binary.BigEndian.AppendUint64(nil, uint64(v.us))
		p = binary.BigEndian.AppendUint32(p, uint32(int32(-v.east)))
		for _, c := range []*pgconn.PgConn{d.sdb.PgConn(), d.pg.PgConn()} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			res := c.ExecParams(ctx, "INSERT INTO tz VALUES ($1, 1, $2)", [][]byte{[]byte(fmt.Sprint(2000 + i)), p},
				[]uint32{23, 1266}, []int16{0, 1}, nil).Read()
			cancel()
			if res.Err != nil {
				t.Fatalf("INSERT with binary parameters: %v", res.Err)
			}
		}
	}
	checkAll(4)

	srv.Kill9()
	srv.Restart(t)
	d.sdb = srv.Conn(t)
	checkAll(5)
	ingest(0, gen(15))
	checkAll(6)
}

// timetzInput writes a time of day us at a zone east seconds east of UTC
// in one of the forms timetz_in accepts.
func timetzInput(rng *rand.Rand, us, east int64) string {
	tm := timeInput(rng, us)
	if strings.HasSuffix(tm, "+05:30") {
		tm = strings.TrimSuffix(tm, "+05:30")
	}
	tm = strings.TrimSpace(tm)
	if c := tm[len(tm)-1]; c >= 'A' {
		// After AM/PM a space: PostgreSQL reads "AM-01" as a POSIX zone
		// spec (its sign inverted, AM dropped); streamdb reads AM and -01.
		tm += " "
	}
	if east == 0 {
		switch rng.IntN(4) {
		case 0:
			return tm
		case 1:
			return tm + " Z"
		case 2:
			return tm + " UTC"
		}
	}
	sign := "+"
	a := east
	if a < 0 {
		sign, a = "-", -a
	}
	h, m, s := a/3600, a/60%60, a%60
	switch {
	case s != 0:
		return fmt.Sprintf("%s%s%02d:%02d:%02d", tm, sign, h, m, s)
	case m == 0 && rng.IntN(2) == 0:
		return fmt.Sprintf("%s%s%02d", tm, sign, h)
	case rng.IntN(2) == 0:
		return fmt.Sprintf("%s %s%02d%02d", tm, sign, h, m)
	}
	return fmt.Sprintf("%s%s%d:%02d", tm, sign, h, m)
}

// timetzErrors runs statements PostgreSQL refuses (or whose outcome is
// easy to get wrong): each must fail with PostgreSQL's SQLSTATE, or
// succeed with its rows.
func timetzErrors(t *testing.T, d *diffRun) {
	t.Helper()
	sameOutcomeAsPG(t, d,
		`SELECT '25:00+00'::timetz`,
		`SELECT '12:60+00'::timetz`,
		`SELECT '12:00+16'::timetz`,
		`SELECT '12:00+15:60'::timetz`,
		`SELECT '12:00 +'::timetz`,
		`SELECT 'noon'::timetz`,
		`SELECT '12:00 XYZ'::timetz`,
		`SELECT tt::int FROM tz`,
		`SELECT tt::timestamp FROM tz`,
		`SELECT tt::timestamptz FROM tz`,
		`SELECT tt::interval FROM tz`,
		`SELECT tt = '04:05'::text FROM tz`,
		`SELECT sum(tt) FROM tz`,
		`SELECT avg(tt) FROM tz`,
		`SELECT '2026-01-01 00:00'::timestamp::timetz`,
		`SELECT tt + interval '1 hour', tt - interval '25 hours' FROM tz`) // TestTimeArithPG has the rest
}

// sameOutcomeAsPG runs each statement on both systems: both must fail with
// the same SQLSTATE, or both succeed with the same rows.
func sameOutcomeAsPG(t *testing.T, d *diffRun, qs ...string) {
	t.Helper()
	for _, q := range qs {
		want, perr := queryRows(d.pg, q)
		got, serr := queryRows(d.sdb, q)
		switch {
		case perr == nil && serr == nil:
			if diff := diffRows(got, want); diff != "" {
				t.Errorf("%s:\n%s", q, diff)
			}
		case perr == nil || serr == nil || code(perr) != code(serr):
			t.Errorf("%s: streamdb %s (%v), want %s (PostgreSQL: %v)", q, code(serr), serr, code(perr), perr)
		}
	}
}
