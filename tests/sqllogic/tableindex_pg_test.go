package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Indexes on tables (CREATE INDEX ON a keyed or append-only table,
// exec/tableindex.go): the same tables, indexes and writes on streamdb and
// PostgreSQL 15, lookups compared after the writes of every path (INSERT,
// ON CONFLICT, UPDATE, DELETE, COPY text and CSV, keyed COPY, INSERT ...
// SELECT, COMMIT and ROLLBACK), across a restart and kill -9; the
// catalogs and psql's \d list the indexes alike.

var tableIndexDDL = []string{
	"CREATE TABLE ik (id INT PRIMARY KEY, k INT, s TEXT, v BIGINT)",
	"CREATE TABLE ie (k INT, s TEXT, v BIGINT)",
	"CREATE INDEX ik_k ON ik (k)",
	"CREATE INDEX ON ie (v)",
}

// tableIndexesAfter are built from rows already written.
var tableIndexesAfter = []string{
	"CREATE INDEX ik_s_k ON ik USING btree (s, k)",
	"CREATE INDEX IF NOT EXISTS ie_s ON ie (s ASC)",
	"CREATE INDEX ik_v ON ik (v)",
}

func tableIndexQueries(rng *rand.Rand) []string {
	k := func() int { return rng.IntN(8) }
	s := func() string { return fmt.Sprintf("'s%d'", rng.IntN(5)) }
	return []string{
		fmt.Sprintf("SELECT * FROM ik WHERE k = %d", k()),
		fmt.Sprintf("SELECT * FROM ik WHERE k IN (%d, %d, %d, NULL)", k(), k(), k()),
		fmt.Sprintf("SELECT * FROM ik WHERE k BETWEEN %d AND %d", k(), k()+2),
		fmt.Sprintf("SELECT id, v FROM ik WHERE k > %d AND k < %d", k(), k()+3),
		fmt.Sprintf("SELECT * FROM ik WHERE s = %s AND k < %d", s(), k()),
		fmt.Sprintf("SELECT * FROM ik WHERE %d = k AND s = %s", k(), s()),
		fmt.Sprintf("SELECT count(*), sum(v) FROM ik WHERE v >= %d", rng.IntN(50)),
		fmt.Sprintf("SELECT * FROM ik WHERE v = %d OR k = %d", rng.IntN(50), k()), // no index serves OR
		fmt.Sprintf("SELECT * FROM ie WHERE v = %d", rng.IntN(50)),
		fmt.Sprintf("SELECT * FROM ie WHERE v >= %d AND v < %d", rng.IntN(50), rng.IntN(60)),
		fmt.Sprintf("SELECT count(*) FROM ie WHERE s = %s", s()),
		fmt.Sprintf("SELECT * FROM ie WHERE s > %s AND k = %d", s(), k()),
		fmt.Sprintf("SELECT i.id, e.v FROM ik i JOIN ie e ON i.k = e.k WHERE i.k = %d AND e.v < 20", k()),
	}
}

// tableIndexWrite is one random write of any path; copies go through pgx.
func tableIndexWrite(t *testing.T, sdb, pgc *pgx.Conn, rng *rand.Rand) {
	t.Helper()
	switch rng.IntN(8) {
	case 0:
		// COPY text into the stream, CSV into the keyed table (new keys).
		var text, csv strings.Builder
		for i := 0; i < 1+rng.IntN(20); i++ {
			fmt.Fprintf(&text, "%d\ts%d\t%d\n", rng.IntN(8), rng.IntN(5), rng.IntN(50))
		}
		for i := 0; i < 1+rng.IntN(5); i++ {
			fmt.Fprintf(&csv, "%d,%d,s%d,%d\n", 1000+rng.IntN(1<<20), rng.IntN(8), rng.IntN(5), rng.IntN(50))
		}
		for _, c := range []struct{ sql, data string }{{"COPY ie FROM STDIN", text.String()}, {"COPY ik FROM STDIN (FORMAT csv)", csv.String()}} {
			_, serr := sdb.PgConn().CopyFrom(context.Background(), strings.NewReader(c.data), c.sql)
			_, perr := pgc.PgConn().CopyFrom(context.Background(), strings.NewReader(c.data), c.sql)
			if got, want := errText(serr), errText(perr); got != want {
				t.Fatalf("%s\n  streamdb:   %q\n  PostgreSQL: %q", c.sql, got, want)
			}
		}
	case 1:
		// A transaction on the stream, committed or rolled back.
		end := []string{"COMMIT", "ROLLBACK"}[rng.IntN(2)]
		for _, s := range []string{"BEGIN",
			// The block's INSERT ... SELECT does not read the row the
			// block inserted (streamdb's block reads the committed rows).
			fmt.Sprintf("INSERT INTO ie VALUES (%d, 's%d', %d)", rng.IntN(8), rng.IntN(5), 50+rng.IntN(10)),
			fmt.Sprintf("INSERT INTO ie SELECT k, s, v + 1 FROM ie WHERE v = %d", rng.IntN(50)),
			end} {
			indexExecBoth(t, sdb, pgc, s)
		}
	case 2:
		indexExecBoth(t, sdb, pgc, fmt.Sprintf("INSERT INTO ik SELECT id + 500, k, s, v FROM ik WHERE k = %d ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v + 1", rng.IntN(8)))
	default:
		indexExecBoth(t, sdb, pgc, indexStmt(rng))
	}
}

func tableIndexCompare(t *testing.T, sdb, pgc *pgx.Conn, rng *rand.Rand, when string) {
	t.Helper()
	for _, q := range tableIndexQueries(rng) {
		if d := diffWithPG(t, sdb, pgc, q); d != "" {
			t.Fatalf("%s: %s differs from PostgreSQL:\n%s", when, q, d)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range []string{"SELECT * FROM ik WHERE k = $1", "SELECT * FROM ie WHERE v = $1"} {
		k := []byte(fmt.Sprint(rng.IntN(8)))
		got := sdb.PgConn().ExecParams(ctx, q, [][]byte{k}, nil, nil, nil).Read()
		want := pgc.PgConn().ExecParams(ctx, q, [][]byte{k}, nil, nil, nil).Read()
		if got.Err != nil || want.Err != nil {
			t.Fatalf("%s: %s: streamdb %v, PostgreSQL %v", when, q, got.Err, want.Err)
		}
		if d := diffRows(rowLines(got.Rows), rowLines(want.Rows)); d != "" {
			t.Fatalf("%s: %s with $1 = %s differs from PostgreSQL:\n%s", when, q, k, d)
		}
	}
}

// tableIndexCatalog are catalog queries whose answers equal PostgreSQL's.
var tableIndexCatalog = []string{
	"SELECT schemaname, tablename, indexname, indexdef FROM pg_indexes WHERE tablename IN ('ik', 'ie')",
	"SELECT c.relname, c.relkind, c.relhasindex FROM pg_class c WHERE c.relname IN ('ik', 'ie', 'ik_k', 'ik_pkey', 'ie_v_idx', 'ik_s_k', 'ie_s', 'ik_v')",
	"SELECT x.relname, t.relname, i.indnatts, i.indisunique, i.indisprimary FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid " +
		"JOIN pg_class t ON t.oid = i.indrelid WHERE t.relname IN ('ik', 'ie')",
	"SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid WHERE t.relname = 'ik'",
}

// psqlIndexes returns the "Indexes:" lines psql's \d table prints, and
// the rows of \di, at conn.
func psqlIndexes(t *testing.T, conn, table string) string {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, psql, "-X", "-d", conn, "-c", `\d `+table, "-c", `\di `+table+`*`)
	cmd.Env = append(cmd.Environ(), "LC_ALL=C", "PAGER=", "PSQLRC=/dev/null", "PGSSLMODE=disable")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql \\d %s: %v\n%s", table, err, out)
	}
	var keep []string
	in := false
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case l == "Indexes:":
			in = true
		case in && strings.HasPrefix(l, "    "):
			keep = append(keep, l)
		case strings.Contains(l, "| index |"):
			in = false
			// Owner differs (streamdb's bootstrap role vs postgres).
			f := strings.Split(l, "|")
			keep = append(keep, strings.TrimSpace(f[0])+"|"+strings.TrimSpace(f[1])+"|"+strings.TrimSpace(f[2])+"|"+strings.TrimSpace(f[4]))
		default:
			in = false
		}
	}
	return strings.Join(keep, "\n")
}

func tableIndexCatalogs(t *testing.T, srv *Server, pg *PG, sdb, pgc *pgx.Conn, when string) {
	t.Helper()
	for _, q := range tableIndexCatalog {
		if d := diffWithPG(t, sdb, pgc, q); d != "" {
			t.Errorf("%s: %s differs from PostgreSQL:\n%s", when, q, d)
		}
	}
	for _, tab := range []string{"ik", "ie"} {
		if got, want := psqlIndexes(t, srv.ConnString(), tab), psqlIndexes(t, pg.ConnString(), tab); got != want {
			t.Errorf("%s: psql \\d %s and \\di: streamdb\n%s\nPostgreSQL\n%s", when, tab, got, want)
		}
	}
}

// TestTableIndexPG creates indexes on a keyed and an append-only table,
// before and after their rows, writes through every path and compares
// lookups through them with PostgreSQL; EXPLAIN shows the index, the
// catalogs and psql list it as PostgreSQL does, and a restart, a kill -9
// amid writes, DROP INDEX and DROP TABLE keep lookups right.
func TestTableIndexPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, s := range tableIndexDDL {
		indexExecBoth(t, sdb, pgc, s)
	}
	rng := rand.New(rand.NewPCG(7, 33))
	for step := 0; step < 120; step++ {
		tableIndexWrite(t, sdb, pgc, rng)
	}
	tableIndexCompare(t, sdb, pgc, rng, "before the later indexes")
	for _, s := range tableIndexesAfter {
		indexExecBoth(t, sdb, pgc, s)
	}
	tableIndexCompare(t, sdb, pgc, rng, "after the indexes were built")
	for step := 0; step < 150 && !t.Failed(); step++ {
		tableIndexWrite(t, sdb, pgc, rng)
		if step%5 == 4 {
			tableIndexCompare(t, sdb, pgc, rng, fmt.Sprintf("step %d", step))
		}
	}
	for q, want := range map[string]string{
		"SELECT * FROM ik WHERE k = 3":                "IndexScan ik using ik_k: (ik.k = 3)",
		"SELECT * FROM ik WHERE k BETWEEN 2 AND 4":    "IndexScan ik using ik_k: (ik.k >= 2) AND (ik.k <= 4)",
		"SELECT * FROM ik WHERE s = 's1' AND k > 2":   "IndexScan ik using ik_s_k: (ik.s = 's1') AND (ik.k > 2)",
		"SELECT * FROM ik WHERE k IN (1, 2)":          "IndexScan ik using ik_k: ",
		"SELECT * FROM ie WHERE v = $1":               "IndexScan ie using ie_v_idx: (ie.v = $1)",
		"SELECT * FROM ie WHERE v > 1 AND v < 9":      "IndexScan ie using ie_v_idx: (ie.v > 1) AND (ie.v < 9)",
		"SELECT * FROM ie WHERE k = 3":                "StreamScan ie",
		"SELECT * FROM ik WHERE k + 1 = 3":            "ChangelogScan ik",
		"SELECT * FROM ik WHERE id = 3 AND v + 0 = 1": "ChangelogScan ik",
	} {
		if plan := indexExplain(t, sdb, q); !strings.Contains(plan, want) {
			t.Errorf("EXPLAIN %s lacks %q:\n%s", q, want, plan)
		}
	}
	tableIndexCatalogs(t, srv, pg, sdb, pgc, "before a restart")

	// DROP INDEX: the plan falls back to the scan, lookups still agree.
	indexExecBoth(t, sdb, pgc, "DROP INDEX ik_v")
	if plan := indexExplain(t, sdb, "SELECT * FROM ik WHERE v = 1"); !strings.Contains(plan, "ChangelogScan ik") {
		t.Errorf("after DROP INDEX ik_v:\n%s", plan)
	}
	tableIndexCompare(t, sdb, pgc, rng, "after DROP INDEX")

	srv.Restart(t)
	sdb = srv.Conn(t)
	tableIndexCompare(t, sdb, pgc, rng, "after a restart")
	tableIndexCatalogs(t, srv, pg, sdb, pgc, "after a restart")

	// kill -9 amid writes (no CHECKPOINT: a table's rows are durable when
	// their statement returns; the index catches up from its mark).
	for step := 0; step < 40; step++ {
		tableIndexWrite(t, sdb, pgc, rng)
		if step%10 == 9 {
			tableIndexCompare(t, sdb, pgc, rng, "amid writes")
		}
	}
	srv.Kill9()
	srv.Restart(t)
	sdb = srv.Conn(t)
	tableIndexCompare(t, sdb, pgc, rng, "after kill -9")
	for step := 0; step < 30; step++ {
		tableIndexWrite(t, sdb, pgc, rng)
	}
	tableIndexCompare(t, sdb, pgc, rng, "after kill -9 and more writes")

	// DROP TABLE drops its indexes, as PostgreSQL does; their names are free.
	indexExecBoth(t, sdb, pgc, "DROP TABLE ie")
	if rows, err := queryRows(sdb, "SELECT indexname FROM pg_indexes WHERE tablename = 'ie'"); err != nil || len(rows) != 0 {
		t.Errorf("indexes of ie after DROP TABLE: %v %v", rows, err)
	}
	indexExecBoth(t, sdb, pgc, "CREATE TABLE ie (k INT, s TEXT, v BIGINT)")
	indexExecBoth(t, sdb, pgc, "CREATE INDEX ie_s ON ie (s)")
	indexExecBoth(t, sdb, pgc, "INSERT INTO ie VALUES (1, 's1', 1), (2, 's2', 2)")
	if d := diffWithPG(t, sdb, pgc, "SELECT * FROM ie WHERE s = 's1'"); d != "" {
		t.Errorf("a new table's index of a dropped one's name: %s", d)
	}
}

// TestTableIndexErrors checks what CREATE INDEX refuses on tables: a
// unique index (the table's PRIMARY KEY is its unique key) and what it
// refuses on views.
func TestTableIndexErrors(t *testing.T) {
	srv := StartServer(t, "")
	sdb := srv.Conn(t)
	execAll(t, sdb, "CREATE TABLE t (a INT, b TEXT, j JSONB)", "CREATE TABLE tk (id INT PRIMARY KEY, a INT)", "CREATE INDEX t_a ON t (a)")
	for _, c := range []struct{ sql, code string }{
		{"CREATE UNIQUE INDEX t_u ON t (a)", "0A000"},
		{"CREATE UNIQUE INDEX tk_u ON tk (a)", "0A000"},
		{"CREATE INDEX t_j ON t (j)", "0A000"},
		{"CREATE INDEX t_x ON t (nope)", "42703"},
		{"CREATE INDEX t_a ON tk (a)", "42P07"},
		{"CREATE INDEX t ON tk (a)", "42P07"},
		{"CREATE INDEX t_e ON t ((a + 1))", "0A000"},
		{"DROP INDEX t", "42809"},
	} {
		err := keyedExec(sdb, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", c.sql, err, c.code)
		}
	}
	execAll(t, sdb, "CREATE INDEX IF NOT EXISTS t_a ON t (b)", "DROP INDEX t_a", "CREATE INDEX t_a ON tk (a)")
}

// TestTableIndexRestore: RESTORE rewinds a view over an indexed table,
// never the table: lookups through the table's index equal a scan's after
// it, and the view reads the table's rows again.
func TestTableIndexRestore(t *testing.T) {
	srv := StartServer(t, "")
	sdb := srv.Conn(t)
	execAll(t, sdb,
		"CREATE TABLE t (id INT PRIMARY KEY, a INT, b TEXT)",
		"CREATE INDEX t_a ON t (a)",
		"CREATE MATERIALIZED VIEW v AS SELECT a, count(*) AS n FROM t GROUP BY a",
		"INSERT INTO t VALUES (1, 1, 'x'), (2, 2, 'y'), (3, 1, 'x')",
		"CHECKPOINT",
		"CREATE SAVEPOINT sp FOR v",
		"UPDATE t SET a = 2 WHERE id = 1",
		"INSERT INTO t VALUES (4, 4, 'q')",
		"CHECKPOINT",
		"RESTORE v FROM SAVEPOINT sp",
		"DELETE FROM t WHERE id = 3",
		"CHECKPOINT",
	)
	for a := 1; a <= 5; a++ {
		got, err := queryRows(sdb, fmt.Sprintf("SELECT * FROM t WHERE a = %d", a))
		if err != nil {
			t.Fatal(err)
		}
		want, err := queryRows(sdb, fmt.Sprintf("SELECT * FROM t WHERE a + 0 = %d", a))
		if err != nil {
			t.Fatal(err)
		}
		if d := diffRows(got, want); d != "" {
			t.Errorf("a = %d after RESTORE: the index differs from a scan:\n%s", a, d)
		}
	}
}

// TestTableIndexPartitionsAndViews: an index on a stream of two
// partitions that a view reads (so statements read the stream at the
// view's committed cut, which lags the log until a checkpoint): lookups
// through the index equal the same filter over a scan at every step.
func TestTableIndexPartitionsAndViews(t *testing.T) {
	srv := StartServer(t, "")
	sdb := srv.Conn(t)
	execAll(t, sdb,
		"CREATE TABLE p (a INT, b TEXT) WITH (partitions = 2)",
		"INSERT INTO p VALUES (1, 'x'), (2, 'y'), (3, 'z'), (1, 'w')",
		"CREATE INDEX p_a ON p (a)",
		"CREATE MATERIALIZED VIEW pv AS SELECT a, count(*) AS n FROM p GROUP BY a",
	)
	rng := rand.New(rand.NewPCG(3, 4))
	for step := 0; step < 40; step++ {
		execAll(t, sdb, fmt.Sprintf("INSERT INTO p VALUES (%d, 's%d'), (%d, 't')", rng.IntN(6), step, rng.IntN(6)))
		if step%7 == 3 {
			execAll(t, sdb, "CHECKPOINT")
		}
		a := rng.IntN(6)
		for _, q := range []string{"SELECT * FROM p WHERE a = %d", "SELECT * FROM p WHERE a >= %d AND a < 4"} {
			got, err := queryRows(sdb, fmt.Sprintf(q, a))
			if err != nil {
				t.Fatal(err)
			}
			want, err := queryRows(sdb, strings.Replace(fmt.Sprintf(q, a), "WHERE a ", "WHERE a + 0 ", 1))
			if err != nil {
				t.Fatal(err)
			}
			if d := diffRows(got, want); d != "" {
				t.Fatalf("step %d: %s: the index differs from a scan:\n%s", step, fmt.Sprintf(q, a), d)
			}
		}
	}
	if plan := indexExplain(t, sdb, "SELECT * FROM p WHERE a = 1"); !strings.Contains(plan, "IndexScan p using p_a") {
		t.Errorf("EXPLAIN:\n%s", plan)
	}
}
