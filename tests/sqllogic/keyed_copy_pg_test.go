package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestKeyedCopyPG runs COPY FROM into a table with a primary key on
// streamdb and PostgreSQL 15: new keys are inserted (text and CSV, with a
// column list and a DEFAULT), and a key already in the table, a key twice
// in the data or a NULL key fails the whole COPY with the same SQLSTATE on
// both; a view over the table follows. Inside a transaction block streamdb
// refuses the COPY (0A000), as it does INSERT into such a table.
func TestKeyedCopyPG(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a differential volume test of types and statements, run in the plain step")
	}
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, c := range []*pgx.Conn{sdb, pgc} {
		if err := keyedExec(c, "CREATE TABLE kc (k INT PRIMARY KEY, g INT, s TEXT DEFAULT 'd')"); err != nil {
			t.Fatal(err)
		}
	}
	if err := keyedExec(sdb, "CREATE MATERIALIZED VIEW kcv AS SELECT g, count(*) AS n, max(s) AS mx FROM kc GROUP BY g"); err != nil {
		t.Fatal(err)
	}
	copyIn := func(c *pgx.Conn, data, stmt string) (int64, error) {
		tag, err := c.PgConn().CopyFrom(context.Background(), strings.NewReader(data), stmt)
		return tag.RowsAffected(), err
	}
	var big strings.Builder
	for i := 100; i < 5100; i++ {
		fmt.Fprintf(&big, "%d\t%d\ts%d\n", i, i%7, i%13)
	}
	steps := []struct{ data, stmt string }{
		{"1\t1\ta\n2\t1\tb\n3\t2\t\\N\n", "COPY kc FROM STDIN"},
		{"4,2,x\n5,3,\"y,z\"\n", "COPY kc FROM STDIN (FORMAT csv)"},
		{"6\t3\n7\t1\n", "COPY kc (k, g) FROM STDIN"},
		{"8\t1\tq\n2\t9\tdup\n", "COPY kc FROM STDIN"},   // 2 is in the table
		{"9\t1\tq\n9\t2\tagain\n", "COPY kc FROM STDIN"}, // 9 twice in the data
		{"\\N\t1\tnullkey\n", "COPY kc FROM STDIN"},      // NULL key
		{big.String(), "COPY kc FROM STDIN"},
		{"5100\t1\tlast\n", "COPY kc FROM STDIN"},
	}
	for i, st := range steps {
		sn, serr := copyIn(sdb, st.data, st.stmt)
		pn, perr := copyIn(pgc, st.data, st.stmt)
		got, want := errText(serr), errText(perr)
		if strings.HasPrefix(want, "23502") {
			// PostgreSQL's DETAIL shows the failing row; streamdb's the line.
			got, want = sqlstate(serr)+" "+serr.Error(), sqlstate(perr)+" "+perr.Error()
		}
		if got != want {
			t.Fatalf("step %d: %s\n  streamdb:   %q\n  PostgreSQL: %q", i, st.stmt, got, want)
		}
		if sn != pn {
			t.Errorf("step %d: COPY %d rows, PostgreSQL %d", i, sn, pn)
		}
		if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM kc"); diff != "" {
			t.Fatalf("step %d: table differs:\n%s", i, diff)
		}
	}
	if err := keyedExec(sdb, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	want, err := queryRows(pgc, "SELECT g, count(*) AS n, max(s) AS mx FROM kc GROUP BY g")
	if err != nil {
		t.Fatal(err)
	}
	got, err := queryRows(sdb, "SELECT * FROM kcv")
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffRows(got, want); diff != "" {
		t.Errorf("view kcv differs from the query on PostgreSQL:\n%s", diff)
	}

	// A transaction block: the COPY's rows are the block's, kept by COMMIT
	// and dropped by ROLLBACK (TestKeyedTxnPG covers more).
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		tx, err := sdb.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err = tx.Conn().PgConn().CopyFrom(context.Background(), strings.NewReader("6000\t1\tx\n"), "COPY kc FROM STDIN"); err != nil {
			t.Fatalf("COPY in a transaction block: %v", err)
		}
		if _, err := tx.Conn().Exec(context.Background(), end); err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if end == "COMMIT" {
			want = 1
		}
		if n := count(t, sdb, "SELECT count(*) FROM kc WHERE k = 6000"); n != want {
			t.Errorf("after %s the COPY's row is there %d times, want %d", end, n, want)
		}
	}
}
