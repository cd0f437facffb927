package sqllogic

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// copyBinaryCols are the columns of TestCopyBinaryPG's table: the types
// users load with drivers' binary COPY.
var copyBinaryCols = []string{"i INT", "b BIGINT", "s SMALLINT", "f DOUBLE PRECISION", "r REAL",
	"t TEXT", "v VARCHAR(12)", "n NUMERIC(12,3)", "ok BOOLEAN", "d DATE", "ts TIMESTAMP",
	"tz TIMESTAMPTZ", "iv INTERVAL", "tm TIME", "j JSONB", "u UUID", "by BYTEA"}

// TestCopyBinaryPG loads rows with pgx's CopyFrom (PostgreSQL's binary
// COPY format) into streamdb and PostgreSQL 15, into an append-only and a
// keyed table, and compares the tables and a view; then compares COPY TO
// STDOUT (FORMAT binary) byte for byte, loads PostgreSQL's binary output
// back into streamdb, and checks that malformed files fail as PostgreSQL's
// do.
func TestCopyBinaryPG(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a differential volume test of types and statements, run in the plain step")
	}
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ctx := context.Background()
	ddl := []string{
		"CREATE TABLE cb (" + strings.Join(copyBinaryCols, ", ") + ")",
		"CREATE TABLE cb2 (" + strings.Join(copyBinaryCols, ", ") + ")",
		"CREATE TABLE cbk (k BIGINT PRIMARY KEY, g INT, name TEXT)",
	}
	for _, c := range []*pgx.Conn{sdb, pgc} {
		for _, s := range ddl {
			if err := keyedExec(c, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	if err := keyedExec(sdb, "CREATE MATERIALIZED VIEW cbv AS SELECT ok, count(*) AS n, sum(b) AS sb, max(ts) AS mts, min(v) AS mv FROM cb GROUP BY ok"); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(copyBinaryCols))
	for i, c := range copyBinaryCols {
		names[i] = strings.Fields(c)[0]
	}
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	var rows [][]any
	for i := range 3000 {
		maybe := func(v any) any {
			if rng.IntN(9) == 0 {
				return nil
			}
			return v
		}
		var num pgtype.Numeric
		if err := num.Scan(fmt.Sprintf("%d.%03d", rng.IntN(2000000)-1000000, rng.IntN(1000))); err != nil {
			t.Fatal(err)
		}
		uuid := [16]byte{}
		for j := range uuid {
			uuid[j] = byte(rng.IntN(256))
		}
		rows = append(rows, []any{
			maybe(int32(rng.IntN(1000) - 500)), maybe(rng.Int64() >> rng.IntN(60)), maybe(int16(rng.IntN(600))),
			maybe(rng.NormFloat64() * 1e3), maybe(float32(rng.IntN(1000)) / 8),
			maybe(fmt.Sprintf("text %d é\t\\ %q", i, "x")), maybe(fmt.Sprintf("v%d", rng.IntN(50))), maybe(num),
			maybe(rng.IntN(2) == 0), maybe(base.AddDate(0, 0, rng.IntN(400)-200)),
			maybe(base.Add(time.Duration(rng.Int64N(1e15)))), maybe(base.Add(time.Duration(rng.Int64N(1e15)))),
			maybe(time.Duration(rng.Int64N(1e13))), maybe(pgtype.Time{Microseconds: rng.Int64N(86400e6), Valid: true}),
			maybe(map[string]any{"a": rng.IntN(10), "b": []any{"x", i}}), maybe(uuid),
			maybe([]byte{0, byte(i), 0xff, '\\'}),
		})
	}
	for _, c := range []*pgx.Conn{sdb, pgc} {
		n, err := c.CopyFrom(ctx, pgx.Identifier{"cb"}, names, pgx.CopyFromRows(rows))
		if err != nil || n != int64(len(rows)) {
			t.Fatalf("CopyFrom: %d rows, %v", n, err)
		}
	}
	if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM cb"); diff != "" {
		t.Fatalf("table cb differs:\n%s", diff)
	}

	// A keyed table: the key is checked as for INSERT.
	krows := [][]any{{int64(1), int32(1), "a"}, {int64(2), nil, "b"}, {int64(3), int32(2), nil}}
	for _, c := range []*pgx.Conn{sdb, pgc} {
		if _, err := c.CopyFrom(ctx, pgx.Identifier{"cbk"}, []string{"k", "g", "name"}, pgx.CopyFromRows(krows)); err != nil {
			t.Fatal(err)
		}
		_, err := c.CopyFrom(ctx, pgx.Identifier{"cbk"}, []string{"k", "g", "name"}, pgx.CopyFromRows(krows[1:2]))
		wantErr(t, "binary COPY of an existing key", err, "23505", "duplicate key")
	}
	if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM cbk"); diff != "" {
		t.Fatalf("table cbk differs:\n%s", diff)
	}

	// COPY TO binary, byte for byte.
	var out [2]bytes.Buffer
	for i, c := range []*pgx.Conn{sdb, pgc} {
		// Ordered by every column but j (streamdb refuses to order jsonb):
		// rows are unique without it, and a table's scan order is not
		// insertion order on streamdb (partitions).
		q := "COPY (SELECT * FROM cb ORDER BY b, i, s, f, r, t, v, n, ok, d, ts, tz, iv, tm, u, by) TO STDOUT (FORMAT binary)"
		if _, err := c.PgConn().CopyTo(ctx, &out[i], q); err != nil {
			t.Fatalf("COPY TO binary: %v", err)
		}
	}
	if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
		a, b := out[0].Bytes(), out[1].Bytes()
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		t.Errorf("COPY TO binary: %d bytes, PostgreSQL %d; first difference at %d: %q vs %q", len(a), len(b), i,
			a[max(0, i-16):min(len(a), i+16)], b[max(0, i-16):min(len(b), i+16)])
	}
	// PostgreSQL's file back into streamdb, split in odd pieces.
	if _, err := sdb.PgConn().CopyFrom(ctx, &chunkReader{b: out[1].Bytes(), n: 777}, "COPY cb2 FROM STDIN (FORMAT binary)"); err != nil {
		t.Fatalf("COPY FROM PostgreSQL's binary file: %v", err)
	}
	want, err := queryRows(pgc, "SELECT * FROM cb")
	if err != nil {
		t.Fatal(err)
	}
	got, err := queryRows(sdb, "SELECT * FROM cb2")
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffRows(got, want); diff != "" {
		t.Errorf("cb2 (PostgreSQL's binary file) is not cb:\n%s", diff)
	}

	// The view over the binary-loaded table.
	if err := keyedExec(sdb, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	want, err = queryRows(pgc, "SELECT ok, count(*) AS n, sum(b) AS sb, max(ts) AS mts, min(v) AS mv FROM cb GROUP BY ok")
	if err != nil {
		t.Fatal(err)
	}
	got, err = queryRows(sdb, "SELECT * FROM cbv")
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffRows(got, want); diff != "" {
		t.Errorf("view cbv:\n%s", diff)
	}

	// Malformed files fail as PostgreSQL's do, and keep nothing.
	hdr := "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	for _, bad := range []struct{ what, data string }{
		{"bad signature", "PGCOPX\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00"},
		{"wrong field count", hdr + "\x00\x02\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00\x01x"},
		{"truncated tuple", hdr + "\x00\x03\x00\x00\x00\x08\x00\x00"},
		{"int8 field too long", hdr + "\x00\x03\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff"},
		{"data after trailer", hdr + "\xff\xffzz"},
	} {
		var errs [2]error
		for i, c := range []*pgx.Conn{sdb, pgc} {
			_, errs[i] = c.PgConn().CopyFrom(ctx, strings.NewReader(bad.data), "COPY cbk FROM STDIN (FORMAT binary)")
		}
		if errs[0] == nil || errs[1] == nil || sqlstate(errs[0]) != sqlstate(errs[1]) {
			t.Errorf("%s:\n  streamdb:   %v\n  PostgreSQL: %v", bad.what, errs[0], errs[1])
		}
	}
	for _, opt := range []string{"DELIMITER ','", "NULL 'x'", "HEADER"} {
		q := "COPY cbk FROM STDIN (FORMAT binary, " + opt + ")"
		serr, perr := keyedExec(sdb, q), keyedExec(pgc, q)
		if sqlstate(serr) != sqlstate(perr) {
			t.Errorf("%s:\n  streamdb:   %v\n  PostgreSQL: %v", q, serr, perr)
		}
	}
	if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM cbk"); diff != "" {
		t.Fatalf("a failed COPY changed cbk:\n%s", diff)
	}
}

// chunkReader reads b at most n bytes at a time: each read is one
// CopyData message, so tuples are split across messages.
type chunkReader struct {
	b []byte
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}
