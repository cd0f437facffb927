package sqllogic

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestColumnDefaultsPG checks DEFAULT column expressions against
// PostgreSQL 15: the same statements on both servers (INSERT with a column
// list, DEFAULT in VALUES, DEFAULT VALUES, INSERT ... SELECT, COPY with a
// column list) must store the same rows, CREATE TABLE must refuse the same
// defaults with the same SQLSTATE, and information_schema.columns,
// pg_attrdef and psql's \d must show the defaults alike.
func TestColumnDefaultsPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	both := []*pgx.Conn{pgc, sdb}
	create := `CREATE TABLE dft (a INT, b TEXT DEFAULT 'x', n BIGINT DEFAULT 7, k INT DEFAULT -3, f BOOLEAN DEFAULT true,
		v VARCHAR(10) DEFAULT 'hi', g DOUBLE PRECISION DEFAULT 1.5, ts TIMESTAMP DEFAULT now(), z TEXT DEFAULT NULL,
		m INT NOT NULL DEFAULT 5, big BIGINT DEFAULT 3000000000, neg NUMERIC DEFAULT -1.25, d DATE DEFAULT '2026-01-31', q TEXT DEFAULT 'it''s')`
	stmts := []string{
		create,
		"INSERT INTO dft (a) VALUES (1)",
		"INSERT INTO dft (a, b) VALUES (2, 'y'), (3, NULL)",
		"INSERT INTO dft VALUES (4, DEFAULT, DEFAULT, 5)",
		"INSERT INTO dft (n, a, b) VALUES (DEFAULT, 5, DEFAULT)",
		"INSERT INTO dft DEFAULT VALUES",
		"INSERT INTO dft (a, n) SELECT 6, 60",
	}
	for _, s := range stmts {
		for _, c := range both {
			mustExec(t, c, "", s)
		}
	}
	for _, c := range both {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("7\tq\n8\t\\N\n"), "COPY dft (a, b) FROM STDIN"); err != nil {
			t.Fatalf("COPY: %v", err)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("9,11\n"), "COPY dft (k, a) FROM STDIN (FORMAT csv)"); err != nil {
			t.Fatalf("COPY csv: %v", err)
		}
		cancel()
	}
	sameRowsAsPG(t, sdb, pgc, "SELECT a, b, n, k, f, v, g, ts IS NOT NULL, z, m, q, big, neg, d FROM dft")
	sameRowsAsPG(t, sdb, pgc, "SELECT column_name, column_default FROM information_schema.columns WHERE table_name = 'dft'")
	sameRowsAsPG(t, sdb, pgc, `SELECT a.attname, a.atthasdef, pg_get_expr(d.adbin, d.adrelid)
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE c.relname = 'dft' AND a.attnum > 0`)
	sameRowsAsPG(t, sdb, pgc, psqlDescribeColumns("dft"))

	// Refusals, with PostgreSQL's SQLSTATEs.
	for _, s := range []string{
		"CREATE TABLE e1 (a INT, b INT DEFAULT a)",
		"CREATE TABLE e2 (a INT DEFAULT 'abc')",
		"CREATE TABLE e3 (a INT DEFAULT (SELECT 1))",
		"CREATE TABLE e4 (a INT DEFAULT count(*))",
		"CREATE TABLE e5 (a INT DEFAULT 1 DEFAULT 2)",
		"CREATE TABLE e6 (a TIMESTAMP DEFAULT true)",
		"INSERT INTO dft (m) VALUES (NULL)",
	} {
		var codes [2]string
		for i, c := range both {
			_, err := c.Exec(context.Background(), s)
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				codes[i] = pe.Code
			} else if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		if codes[0] != codes[1] {
			t.Errorf("%s: streamdb %q, PostgreSQL %q", s, codes[1], codes[0])
		}
	}

	// psql's \d shows the defaults as PostgreSQL's does.
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("no psql")
	}
	describe := func(conn string) string {
		out, err := exec.Command(psql, "-X", "-A", "-t", "-d", conn, "-c", `\d dft`).CombinedOutput()
		if err != nil {
			t.Fatalf("psql \\d: %v\n%s", err, out)
		}
		var cols []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Count(l, "|") >= 4 {
				cols = append(cols, l)
			}
		}
		return strings.Join(cols, "\n")
	}
	if got, want := describe(srv.ConnString()), describe(pg.ConnString()); got != want {
		t.Errorf("psql \\d dft: streamdb\n%s\nPostgreSQL\n%s", got, want)
	}
}
