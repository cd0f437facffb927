package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestTimestamptzPG checks timestamp with time zone against PostgreSQL 15
// (TimeZone UTC on both): generated date/times with numeric offsets (+02,
// -05:30, +0530, +5, +05:30:15), Z, UTC and region names (Europe/Paris,
// lower case too, across its daylight-saving gap and overlap) go in by
// every input path — a cast, a TIMESTAMPTZ literal, INSERT, COPY text and
// CSV, and text parameters of the extended protocol, typed 1184 or left
// to the column — into a timestamptz column beside a plain timestamp one,
// which ignores the offset. The rows, printed by the server (+00) and as
// text, must be PostgreSQL's. Input PostgreSQL refuses is refused with
// its SQLSTATE; a zone abbreviation, which PostgreSQL knows and streamdb
// does not, is refused with 22007 rather than ignored.
func TestTimestamptzPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ctx := context.Background()
	for _, conn := range []*pgx.Conn{sdb, pgc} {
		var tz string
		if err := conn.QueryRow(ctx, "SHOW TimeZone").Scan(&tz); err != nil || tz != "UTC" {
			t.Fatalf("TimeZone %q %v, want UTC", tz, err)
		}
		mustExec(t, conn, "", "CREATE TABLE tz (id INT, t TIMESTAMPTZ, p TIMESTAMP)")
	}

	r := rand.New(rand.NewPCG(6, 12))
	zones := []string{"Z", " UTC", "z", " Europe/Paris", " europe/paris", " America/New_York", " Asia/Kolkata", " Australia/Lord_Howe", " Etc/GMT+5", ""}
	offset := func() string {
		sign := "+-"[r.IntN(2):][:1]
		h, m := r.IntN(16), []int{0, 30, 45}[r.IntN(3)]
		switch r.IntN(6) {
		case 0:
			return fmt.Sprintf("%s%02d", sign, h)
		case 1:
			return fmt.Sprintf("%s%02d:%02d", sign, h, m)
		case 2:
			return fmt.Sprintf("%s%02d%02d", sign, h, m)
		case 3:
			return fmt.Sprintf("%s%d", sign, h)
		case 4:
			return fmt.Sprintf(" %s%02d:%02d:%02d", sign, h, m, r.IntN(60))
		}
		return zones[r.IntN(len(zones))]
	}
	var vals []string
	for range 40 {
		sep := " T"[r.IntN(2):][:1]
		frac := ""
		if r.IntN(3) == 0 {
			frac = fmt.Sprintf(".%d", r.IntN(1000000))
		}
		vals = append(vals, fmt.Sprintf("%04d-%02d-%02d%s%02d:%02d:%02d%s%s", 1900+r.IntN(200), 1+r.IntN(12), 1+r.IntN(28), sep,
			r.IntN(24), r.IntN(60), r.IntN(60), frac, offset()))
	}
	vals = append(vals,
		"2026-01-01 00:00:00+02", "2026-03-29 02:30:00 Europe/Paris", "2026-10-25 02:30:00 Europe/Paris",
		"2026-03-08 02:30:00 America/New_York", "2026-11-01 01:30:00 America/New_York",
		"2026-01-01 00:00:00.5+02 BC", "2026-01-01", "2026-01-01 +02", "infinity", "-infinity", "2026-06-30 23:59:59.999999-00:30", "2026-01-01 00:00:00+02:")

	// Casts and literals, one statement per value: their errors are compared too.
	var bad []string
	for _, v := range vals {
		q := fmt.Sprintf("SELECT '%[1]s'::timestamptz, TIMESTAMPTZ '%[1]s', TIMESTAMP WITH TIME ZONE '%[1]s', '%[1]s'::timestamp, ('%[1]s'::timestamptz)::text, pg_typeof('%[1]s'::timestamptz)", v)
		want, werr := queryRows(pgc, q)
		got, gerr := queryRows(sdb, q)
		if werr != nil || gerr != nil {
			if code(werr) != code(gerr) {
				t.Errorf("%s: streamdb %v, PostgreSQL %v", q, gerr, werr)
			}
			bad = append(bad, v)
			continue
		}
		if d := diffRows(got, want); d != "" {
			t.Errorf("%s:\n%s", q, d)
		}
	}
	for _, v := range []string{"2026-01-01 00:00:00+16", "2026-01-01 00:00:00 Foo/Bar", "2026-01-01 00:00:00 nonsense", "2026-01-01 00:00:00+", "2026-01-01 00:00:00+0x", "2026-01-01 00:00:00 +02 +03"} {
		q := fmt.Sprintf("SELECT '%s'::timestamptz", v)
		_, werr := queryRows(pgc, q)
		_, gerr := queryRows(sdb, q)
		if werr == nil || code(werr) != code(gerr) {
			t.Errorf("%s: streamdb %v, PostgreSQL %v", q, gerr, werr)
		}
	}
	for _, q := range []string{"SELECT '2026-01-01 00:00:00 PST'::timestamptz", "SELECT '2026-07-01 00:00:00 CET'::timestamp"} {
		if _, err := queryRows(sdb, q); code(err) != "22007" {
			t.Errorf("%s: %v, want 22007 (a zone abbreviation is refused, not ignored)", q, err)
		}
	}

	// The other input paths, each with the values both servers accept.
	id := 0
	var copyText, copyCSV strings.Builder
	for _, v := range vals {
		if slices.Contains(bad, v) {
			continue
		}
		for _, conn := range []*pgx.Conn{sdb, pgc} {
			mustExec(t, conn, "", fmt.Sprintf("INSERT INTO tz VALUES (%d, '%s', '%s')", id, v, v))
			for k, oids := range [][]uint32{{23, 1184, 1114}, {23, 0, 0}} {
				res := conn.PgConn().ExecParams(ctx, "INSERT INTO tz VALUES ($1, $2, $3)",
					[][]byte{fmt.Appendf(nil, "%d", id+1+k), []byte(v), []byte(v)}, oids, nil, nil).Read()
				if res.Err != nil {
					t.Fatalf("INSERT with parameters %q (types %v): %v", v, oids, res.Err)
				}
			}
		}
		fmt.Fprintf(&copyText, "%d\t%s\t%s\n", id+3, v, v)
		fmt.Fprintf(&copyCSV, "%d,\"%s\",%s\n", id+4, v, v)
		id += 5
	}
	for _, conn := range []*pgx.Conn{sdb, pgc} {
		for _, c := range []struct{ stmt, data string }{
			{"COPY tz FROM STDIN", copyText.String()},
			{"COPY tz FROM STDIN (FORMAT csv)", copyCSV.String()},
		} {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			_, err := conn.PgConn().CopyFrom(cctx, strings.NewReader(c.data), c.stmt)
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", c.stmt, err)
			}
		}
	}
	// Binary parameters and results: pgx sends a time.Time as UTC microseconds.
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 7, 1, 12, 30, 0, 0, paris)
	var back [2]time.Time
	for i, conn := range []*pgx.Conn{sdb, pgc} {
		if _, err := conn.Exec(ctx, "INSERT INTO tz VALUES (-1, $1, NULL)", at); err != nil {
			t.Fatalf("binary parameter: %v", err)
		}
		if err := conn.QueryRow(ctx, "SELECT t FROM tz WHERE id = -1").Scan(&back[i]); err != nil {
			t.Fatalf("binary result: %v", err)
		}
	}
	if !back[0].Equal(at) || !back[1].Equal(at) {
		t.Errorf("binary round trip of %v: streamdb %v, PostgreSQL %v", at, back[0], back[1])
	}
	for _, q := range []string{
		"SELECT id, t, p, t::text, t::timestamp, p::timestamptz, t::date FROM tz",
		"SELECT id, t + interval '90 minutes', date_trunc('hour', t), extract(epoch FROM t), to_char(t, 'YYYY-MM-DD HH24:MI') FROM tz WHERE t > '2000-01-01 00:00+14' AND t < 'infinity'",
		"SELECT count(*), min(t), max(t) FROM tz WHERE t <> p",
		"SELECT t FROM tz UNION SELECT p FROM tz",
		"SELECT id, coalesce(t, p), CASE WHEN id % 2 = 0 THEN t ELSE p END FROM tz",
	} {
		sameRowsAsPG(t, sdb, pgc, q)
	}
}

// sameRowsAsPG checks that q gives the same rows (as text, in any order)
// on streamdb as on PostgreSQL.
func sameRowsAsPG(t *testing.T, sdb, pg *pgx.Conn, q string) {
	t.Helper()
	want, err := queryRows(pg, q)
	if err != nil {
		t.Fatalf("PostgreSQL: %s: %v", q, err)
	}
	got, err := queryRows(sdb, q)
	if err != nil {
		t.Fatalf("streamdb: %s: %v", q, err)
	}
	if d := diffRows(got, want); d != "" {
		t.Errorf("%s: rows differ from PostgreSQL\n%s", q, d)
	}
}

// code is err's SQLSTATE, "" if it has none.
func code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
