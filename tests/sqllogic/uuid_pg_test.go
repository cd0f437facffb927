package sqllogic

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestUUIDPG checks uuid end to end against PostgreSQL 15, the guard for
// its storage layout (issue 30): uuids made by streamdb's gen_random_uuid()
// leave by COPY TO (FORMAT binary) and load into PostgreSQL; PostgreSQL's
// binary COPY of the same table loads back into a second streamdb table,
// which must equal the first byte for byte; then views over the streams
// (uuid as a GROUP BY key, as a join key, as a top-N order key, under
// count(DISTINCT)) and batch queries (ORDER BY uuid, bytewise as
// PostgreSQL's uuid_cmp) must print PostgreSQL's rows, before and after a
// kill -9 and restart, and as new rows arrive after it.
func TestUUIDPG(t *testing.T) {
	t.Parallel()
	d, srv := startStrictDiff(t,
		"CREATE TABLE ua (id INT, g INT, u UUID)",
		"CREATE TABLE ub (u UUID, w INT)",
		"CREATE TABLE uc (id INT, g INT, u UUID)")
	ctx := context.Background()
	views := []string{
		"SELECT u, count(*) AS c, sum(id) AS s FROM ua GROUP BY u",
		"SELECT g, count(u) AS c, count(DISTINCT u) AS d FROM ua GROUP BY g",
		"SELECT ua.id, ub.w, ua.u FROM ua JOIN ub ON ua.u = ub.u",
		"SELECT ub.u, count(*) AS c, sum(ub.w) AS sw FROM ua JOIN ub ON ua.u = ub.u GROUP BY ub.u",
		"SELECT id, u FROM ua WHERE u IS NOT NULL ORDER BY u, id LIMIT 7",
		"SELECT id, u FROM ua WHERE u IS NOT NULL ORDER BY u DESC, id LIMIT 5",
		"SELECT g, array_agg(u ORDER BY id) AS a FROM ua GROUP BY g",
		"SELECT ua.g, ub.u, count(*) AS c, sum(ub.w) AS sw FROM ua LEFT JOIN ub ON ua.u = ub.u GROUP BY ua.g, ub.u",
		"SELECT u, count(*) AS c FROM ub WHERE u > '80000000-0000-0000-0000-000000000000' GROUP BY u",
	}
	batch := []string{
		"SELECT id, g, u FROM ua",
		"SELECT id, g, u FROM uc",
		"SELECT u, count(*) FROM ub GROUP BY u",
		"SELECT a.id, c.id FROM ua a JOIN uc c ON a.u = c.u",
		"SELECT id, u::text, u::text::uuid, u = '{00000000000000000000000000000000}', u < '80000000-0000-0000-0000-000000000000' FROM ua",
		"SELECT g, array_agg(u ORDER BY id) FROM ua GROUP BY g",
		"SELECT id, coalesce(u, '00000000-0000-0000-0000-000000000000'), CASE WHEN id % 2 = 0 THEN u END FROM ua",
		"SELECT id FROM ua WHERE u IN (SELECT u FROM ub)",
		"SELECT id, u = ANY(ARRAY['00000000-0000-0000-0000-000000000000'::uuid, NULL]), u = ANY('{00000000-0000-0000-0000-000000000000}') FROM ua",
		"SELECT count(DISTINCT u), count(u), count(*) FROM ub",
	}
	cases := d.viewAndBatchCases("uu", "uuid", views, batch)
	// Ordered results, compared in order.
	ordered := []string{
		"SELECT id, u FROM ua ORDER BY u, id",
		"SELECT id, u FROM ua ORDER BY u DESC NULLS LAST, id",
		"SELECT u, w FROM ub ORDER BY u NULLS FIRST, w",
		"SELECT u, count(*) FROM ua GROUP BY u ORDER BY u DESC NULLS FIRST",
	}
	// PostgreSQL 15 has no min(uuid) or max(uuid): both must refuse them alike.
	for _, q := range []string{"SELECT min(u) FROM ua", "SELECT max(u) FROM ub"} {
		if want, got := sqlState(t, d.pg, q), sqlState(t, d.sdb, q); want == "" || got != want {
			t.Errorf("%s: PostgreSQL SQLSTATE %q, streamdb %q", q, want, got)
		}
	}
	rng := rand.New(rand.NewPCG(30, 16))
	nextID := 0
	// ingest makes n rows in streamdb with gen_random_uuid(), copies them
	// to PostgreSQL by binary COPY, loads PostgreSQL's binary COPY of them
	// into uc on both, and adds rows to ub that reuse some of the uuids.
	ingest := func(n int) {
		var vals []string
		for range n {
			nextID++
			u := "gen_random_uuid()"
			if rng.IntN(8) == 0 {
				u = "NULL"
			}
			vals = append(vals, fmt.Sprintf("(%d, %d, %s)", nextID, rng.IntN(5), u))
		}
		d.mustExec(d.sdb, "streamdb", "INSERT INTO ua VALUES "+strings.Join(vals, ", "))
		lo := nextID - n
		sel := fmt.Sprintf("COPY (SELECT id, g, u FROM ua WHERE id > %d) TO STDOUT (FORMAT binary)", lo)
		var out bytes.Buffer
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := d.sdb.PgConn().CopyTo(cctx, &out, sel); err != nil {
			t.Fatalf("streamdb %s: %v", sel, err)
		}
		if _, err := d.pg.PgConn().CopyFrom(cctx, bytes.NewReader(out.Bytes()), "COPY ua FROM STDIN (FORMAT binary)"); err != nil {
			t.Fatalf("PostgreSQL COPY ua FROM binary: %v", err)
		}
		var pgOut bytes.Buffer
		if _, err := d.pg.PgConn().CopyTo(cctx, &pgOut, sel); err != nil {
			t.Fatalf("PostgreSQL %s: %v", sel, err)
		}
		if !bytes.Equal(out.Bytes(), pgOut.Bytes()) {
			t.Fatalf("binary COPY TO differs:\nstreamdb   %x\nPostgreSQL %x", out.Bytes(), pgOut.Bytes())
		}
		for _, c := range [](func() error){
			func() error {
				_, err := d.sdb.PgConn().CopyFrom(cctx, bytes.NewReader(pgOut.Bytes()), "COPY uc FROM STDIN (FORMAT binary)")
				return err
			},
			func() error {
				_, err := d.pg.PgConn().CopyFrom(cctx, bytes.NewReader(pgOut.Bytes()), "COPY uc FROM STDIN (FORMAT binary)")
				return err
			},
		} {
			if err := c(); err != nil {
				t.Fatalf("COPY uc FROM binary: %v", err)
			}
		}
		us, err := queryRows(d.pg, fmt.Sprintf("SELECT u FROM ua WHERE id > %d AND u IS NOT NULL", lo))
		if err != nil {
			t.Fatal(err)
		}
		var bvals []string
		for _, u := range us {
			for k := rng.IntN(3); k > 0; k-- { // some uuids twice, some not at all
				bvals = append(bvals, fmt.Sprintf("(%s, %d)", strings.ToUpper(u), rng.IntN(100))) // u is a quoted literal
			}
		}
		bvals = append(bvals, "(NULL, 1)", "('{00000000000000000000000000000000}', 2)")
		// The extended protocol's binary format: a uuid parameter in
		// binary (16 bytes) finds the rows, returned in binary; and rows
		// inserted with one.
		if len(us) > 0 {
			u := uuidParam(t, us[rng.IntN(len(us))])
			for _, q := range []string{"SELECT id, g, u FROM ua WHERE u = $1 ORDER BY id", "SELECT u, count(*) FROM ua WHERE u >= $1 GROUP BY u ORDER BY u"} {
				want := binaryRows(t, d.pg, q, u)
				if got := binaryRows(t, d.sdb, q, u); !slices.Equal(got, want) {
					t.Errorf("%s with a binary uuid: streamdb %q, PostgreSQL %q", q, got, want)
				}
			}
			for _, c := range []*pgx.Conn{d.sdb, d.pg} {
				binaryRows(t, c, "INSERT INTO ub VALUES ($1, 77)", u)
			}
		}
		for _, c := range []struct {
			name string
			run  func(string)
		}{{"streamdb", func(q string) { d.mustExec(d.sdb, "streamdb", q) }}, {"PostgreSQL", func(q string) { d.mustExec(d.pg, "PostgreSQL", q) }}} {
			c.run("INSERT INTO ub VALUES " + strings.Join(bvals, ", "))
		}
	}
	checkAll := func(round int) {
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		d.mustExec(d.sdb, "streamdb", "CHECKPOINT")
		for _, c := range cases {
			d.checkNorm(c, round, func(s string) string { return s })
		}
		for _, q := range ordered {
			want, err := queryRows(d.pg, q)
			if err != nil {
				t.Fatalf("PostgreSQL: %s: %v", q, err)
			}
			got, err := queryRows(d.sdb, q)
			if err != nil {
				t.Errorf("round %d: %s: %v", round, q, err)
			} else if !slices.Equal(got, want) {
				t.Errorf("round %d: %s: order differs\nstreamdb   %q\nPostgreSQL %q", round, q, got, want)
			}
		}
	}
	for round := 0; round < 2; round++ {
		ingest(40)
		checkAll(round)
	}
	srv.Kill9()
	srv.Restart(t)
	d.sdb = srv.Conn(t)
	checkAll(2)
	ingest(30)
	checkAll(3)
}

// uuidParam is uuid_send's 16 bytes of a uuid's quoted text ('...').
func uuidParam(t *testing.T, quoted string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Trim(quoted, "'"), "-", ""))
	if err != nil || len(b) != 16 {
		t.Fatalf("uuid %s: %v", quoted, err)
	}
	return b
}

// binaryRows runs q by the extended protocol with u as $1, a uuid in the
// binary format, and returns the rows in the binary format (hex).
func binaryRows(t *testing.T, c *pgx.Conn, q string, u []byte) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := c.PgConn().ExecParams(ctx, q, [][]byte{u}, []uint32{2950}, []int16{1}, []int16{1}).Read()
	if res.Err != nil {
		t.Fatalf("%s: %v", q, res.Err)
	}
	var out []string
	for _, r := range res.Rows {
		vals := make([]string, len(r))
		for j, v := range r {
			if v == nil {
				vals[j] = "NULL"
			} else {
				vals[j] = hex.EncodeToString(v)
			}
		}
		out = append(out, strings.Join(vals, " "))
	}
	return out
}
