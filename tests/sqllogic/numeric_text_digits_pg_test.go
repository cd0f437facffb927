package sqllogic

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestNumericTextDigitsPG checks, against PostgreSQL 15, text of more
// decimal places than unconstrained numeric holds (16) through a cast,
// INSERT, a parameter and COPY (text, csv and binary): 22003 with a hint naming numeric(38,N),
// never rounded, nothing stored; numeric(38,N) keeps every digit as
// PostgreSQL does, and text of up to 16 places is unchanged.
func TestNumericTextDigitsPG(t *testing.T) {
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ctx := context.Background()
	ddl := "CREATE TABLE sgt (id INT PRIMARY KEY, s TEXT, n NUMERIC, w NUMERIC(38,22))"
	execAll(t, sdb, ddl)
	execAll(t, pgc, ddl)
	sameRowsAsPG(t, sdb, pgc, "SELECT '0.1234567890123456'::numeric AS a, '1.5e-20'::numeric AS b, '0.12345678901234567890'::numeric AS c")
	// Text with more places than unconstrained numeric holds: PostgreSQL
	// keeps the digits; streamdb refuses, naming the cast that keeps them.
	rows := "INSERT INTO sgt VALUES (1, '1.5e-20', 1, 1.5e-20), (2, '0.12345678901234567890', 2, 0.12345678901234567890), (3, '-0.1234567890123456', 3, 0.1)"
	execAll(t, sdb, rows)
	execAll(t, pgc, rows)
	sameRowsAsPG(t, sdb, pgc, "SELECT id, w, s::numeric(38,22) AS c FROM sgt")
	sameRowsAsPG(t, sdb, pgc, "SELECT id, s::numeric AS c FROM sgt WHERE id = 3")
	want22003 := func(what string, err error) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22003" || !strings.Contains(pe.Message, "more than the 16 numeric holds") || !strings.Contains(pe.Hint, "numeric(38,") {
			t.Errorf("%s: %v (hint %q), want 22003 with a hint to cast to numeric(38,N)", what, err, hintOf(err))
		}
	}
	for _, q := range []string{
		"SELECT s::numeric FROM sgt",
		"SELECT s::numeric FROM sgt WHERE id = 1",
		"SELECT CAST(s AS numeric) + 1 FROM sgt WHERE id = 2",
	} {
		rowSet(t, pgc, q) // PostgreSQL has it
		_, err := sdb.Exec(ctx, q)
		want22003(q, err)
	}
	for _, q := range []string{
		"INSERT INTO sgt VALUES (10, 'a', '1.5e-20', 0)",
		"INSERT INTO sgt VALUES (11, 'a', '0.12345678901234567890', 0)",
		"INSERT INTO sgt VALUES (12, 'a', '  -0.00000000000000001 ', 0)",
	} {
		_, err := sdb.Exec(ctx, q)
		want22003(q, err)
	}
	_, err := sdb.PgConn().CopyFrom(ctx, strings.NewReader("20\ta\t1.25\t0\n21\ta\t0.00000000000000001\t0\n"), "COPY sgt FROM STDIN")
	want22003("COPY", err)
	_, err = sdb.PgConn().CopyFrom(ctx, strings.NewReader("22,a,1.5e-20,0\n"), "COPY sgt FROM STDIN (FORMAT csv)")
	want22003("COPY csv", err)
	// Binary COPY (pgx's CopyFrom) and a parameter: PostgreSQL's numeric
	// of display scale 20, refused the same way.
	_, err = sdb.CopyFrom(ctx, pgx.Identifier{"sgt"}, []string{"id", "s", "n", "w"},
		pgx.CopyFromRows([][]any{{30, "a", "0.12345678901234567890", "0"}}))
	want22003("binary COPY", err)
	_, err = sdb.Exec(ctx, "INSERT INTO sgt VALUES ($1, 'p', $2, 0)", 31, "0.12345678901234567890")
	want22003("parameter", err)
	// Nothing of the refused statements was stored; what fits still goes in.
	ok := "INSERT INTO sgt VALUES (4, 'b', '0.0000000000000001', 1e-16)"
	execAll(t, sdb, ok)
	execAll(t, pgc, ok)
	sameRowsAsPG(t, sdb, pgc, "SELECT id, s, n, w FROM sgt")

}
