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

// Indexes on materialized views (CREATE INDEX, sql/index.go): lookups
// through them are compared with PostgreSQL 15 running the same queries
// over plain views of the same definitions on the same data.

var indexTables = []string{
	"CREATE TABLE ik (id INT PRIMARY KEY, k INT, s TEXT, v BIGINT)",
	"CREATE TABLE ie (k INT, s TEXT, v BIGINT)",
}

// indexViews are created as materialized views on streamdb and as plain
// views on PostgreSQL: an aggregate (rows keyed by group), a filter over a
// changelog table (a multiset of rows), a stream (rows keyed by their
// position), and the aggregate again on the memory state backend.
var indexViews = []struct{ name, with, query string }{
	{"iagg", "", "SELECT k, s, count(*) AS n, sum(v) AS sv FROM ik GROUP BY k, s"},
	{"irows", "", "SELECT k, s, v FROM ik WHERE v >= 10"},
	{"ilog", "", "SELECT k, s, v FROM ie"},
	{"imem", " WITH (state.backend = 'memory')", "SELECT k, count(*) AS n, max(v) AS mv FROM ik GROUP BY k"},
}

// Indexes made before any row is loaded (maintained from the start) and
// after (built from the view's rows, then maintained).
var (
	indexesBefore = []string{
		"CREATE INDEX iagg_k ON iagg (k)",
		"CREATE INDEX ON irows (k, s)",
		"CREATE INDEX ilog_v ON ilog (v)",
	}
	indexesAfter = []string{
		"CREATE INDEX iagg_s_k ON iagg USING btree (s, k)",
		"CREATE INDEX IF NOT EXISTS imem_k ON imem (k)",
		"CREATE INDEX ilog_s ON ilog (s ASC)",
	}
)

// indexQueries are lookups each index serves (and a few no index serves).
func indexQueries(rng *rand.Rand) []string {
	k := func() int { return rng.IntN(8) }
	s := func() string { return fmt.Sprintf("'s%d'", rng.IntN(5)) }
	return []string{
		fmt.Sprintf("SELECT * FROM iagg WHERE k = %d", k()),
		fmt.Sprintf("SELECT * FROM iagg WHERE k IN (%d, %d, %d, NULL)", k(), k(), k()),
		fmt.Sprintf("SELECT * FROM iagg WHERE k BETWEEN %d AND %d", k(), k()+2),
		fmt.Sprintf("SELECT * FROM iagg WHERE k > %d AND n > 1", k()),
		fmt.Sprintf("SELECT * FROM iagg WHERE s = %s", s()),
		fmt.Sprintf("SELECT * FROM iagg WHERE s = %s AND k < %d", s(), k()),
		fmt.Sprintf("SELECT * FROM iagg WHERE %d = k AND s = %s", k(), s()),
		fmt.Sprintf("SELECT k, s FROM irows WHERE k = %d AND s IN (%s, %s)", k(), s(), s()),
		fmt.Sprintf("SELECT * FROM irows WHERE k = %d AND s >= %s", k(), s()),
		fmt.Sprintf("SELECT * FROM irows WHERE k <= %d", k()),
		fmt.Sprintf("SELECT * FROM irows WHERE s = %s", s()), // no index starts with s
		fmt.Sprintf("SELECT * FROM ilog WHERE v = %d", rng.IntN(40)),
		fmt.Sprintf("SELECT * FROM ilog WHERE v >= %d AND v < %d", rng.IntN(40), rng.IntN(60)),
		fmt.Sprintf("SELECT count(*) FROM ilog WHERE s = %s", s()),
		fmt.Sprintf("SELECT * FROM ilog WHERE s > %s", s()),
		fmt.Sprintf("SELECT * FROM imem WHERE k = %d", k()),
		fmt.Sprintf("SELECT * FROM imem WHERE k IN (%d, %d)", k(), k()),
		fmt.Sprintf("SELECT a.k, a.n, m.mv FROM iagg a JOIN imem m ON a.k = m.k WHERE a.k = %d", k()),
	}
}

// indexStmt is one random write: keyed inserts, upserts and deletes (some
// NULL keys and values), and appends to the stream.
func indexStmt(rng *rand.Rand) string {
	val := func(n int) string {
		if rng.IntN(12) == 0 {
			return "NULL"
		}
		return fmt.Sprint(rng.IntN(n))
	}
	str := func() string {
		if rng.IntN(12) == 0 {
			return "NULL"
		}
		return fmt.Sprintf("'s%d'", rng.IntN(5))
	}
	switch rng.IntN(10) {
	case 0, 1, 2:
		var rows []string
		for i := 0; i < 1+rng.IntN(4); i++ {
			rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s)", rng.IntN(60), val(8), str(), val(40)))
		}
		return "INSERT INTO ik VALUES " + strings.Join(rows, ", ") + " ON CONFLICT (id) DO NOTHING"
	case 3, 4:
		return fmt.Sprintf("INSERT INTO ik VALUES (%d, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET k = EXCLUDED.k, s = EXCLUDED.s, v = EXCLUDED.v",
			rng.IntN(60), val(8), str(), val(40))
	case 5:
		return fmt.Sprintf("DELETE FROM ik WHERE id = %d", rng.IntN(60))
	case 6:
		return fmt.Sprintf("UPDATE ik SET v = v + 7 WHERE k = %d", rng.IntN(8))
	default:
		var rows []string
		for i := 0; i < 1+rng.IntN(4); i++ {
			rows = append(rows, fmt.Sprintf("(%s, %s, %s)", val(8), str(), val(40)))
		}
		return "INSERT INTO ie VALUES " + strings.Join(rows, ", ")
	}
}

func indexExecBoth(t *testing.T, sdb, pgc *pgx.Conn, stmt string) {
	t.Helper()
	serr, perr := keyedExec(sdb, stmt), keyedExec(pgc, stmt)
	if got, want := errText(serr), errText(perr); got != want {
		t.Fatalf("%s\n  streamdb:   %q\n  PostgreSQL: %q", stmt, got, want)
	}
}

func indexCompare(t *testing.T, sdb, pgc *pgx.Conn, rng *rand.Rand, when string) {
	t.Helper()
	if err := keyedExec(sdb, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	for _, q := range indexQueries(rng) {
		if d := diffWithPG(t, sdb, pgc, q); d != "" {
			t.Fatalf("%s: %s differs from PostgreSQL:\n%s", when, q, d)
		}
	}
	// A parameter: the lookup's value is bound when the portal runs.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := []byte(fmt.Sprint(rng.IntN(8)))
	q := "SELECT * FROM iagg WHERE k = $1"
	got := sdb.PgConn().ExecParams(ctx, q, [][]byte{k}, nil, nil, nil).Read()
	want := pgc.PgConn().ExecParams(ctx, q, [][]byte{k}, nil, nil, nil).Read()
	if got.Err != nil || want.Err != nil {
		t.Fatalf("%s: %s: streamdb %v, PostgreSQL %v", when, q, got.Err, want.Err)
	}
	if d := diffRows(rowLines(got.Rows), rowLines(want.Rows)); d != "" {
		t.Fatalf("%s: %s with $1 = %s differs from PostgreSQL:\n%s", when, q, k, d)
	}
}

func indexExplain(t *testing.T, sdb *pgx.Conn, q string) string {
	t.Helper()
	plan, err := queryRows(sdb, "EXPLAIN "+q)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", q, err)
	}
	return strings.Join(plan, "\n")
}

// TestViewIndexPG creates indexes on views of every sink kind and both
// state backends, some before and some after their rows, runs random
// writes, and after each few compares indexed lookups with PostgreSQL;
// EXPLAIN shows the index, psql's \d and \di list it, and a restart and a
// kill -9 keep it and its entries.
func TestViewIndexPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, s := range indexTables {
		indexExecBoth(t, sdb, pgc, s)
	}
	for _, v := range indexViews {
		if err := keyedExec(sdb, fmt.Sprintf("CREATE MATERIALIZED VIEW %s%s AS %s", v.name, v.with, v.query)); err != nil {
			t.Fatal(err)
		}
		if err := keyedExec(pgc, fmt.Sprintf("CREATE VIEW %s AS %s", v.name, v.query)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range indexesBefore {
		if err := keyedExec(sdb, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	rng := rand.New(rand.NewPCG(33, 33))
	for step := 0; step < 150; step++ {
		indexExecBoth(t, sdb, pgc, indexStmt(rng))
	}
	for _, s := range indexesAfter {
		if err := keyedExec(sdb, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	indexCompare(t, sdb, pgc, rng, "after the indexes were built")
	for step := 0; step < 120 && !t.Failed(); step++ {
		indexExecBoth(t, sdb, pgc, indexStmt(rng))
		if step%6 == 5 {
			indexCompare(t, sdb, pgc, rng, fmt.Sprintf("step %d", step))
		}
	}

	for q, want := range map[string]string{
		"SELECT * FROM iagg WHERE k = 3":                    "IndexScan iagg using iagg_k: (iagg.k = 3)",
		"SELECT * FROM iagg WHERE s = 's1' AND k > 2":       "IndexScan iagg using iagg_s_k: (iagg.s = 's1') AND (iagg.k > 2)",
		"SELECT * FROM iagg WHERE k BETWEEN 2 AND 4":        "IndexScan iagg using iagg_k: (iagg.k >= 2) AND (iagg.k <= 4)",
		"SELECT * FROM irows WHERE k IN (1, 2) AND s = 'a'": "IndexScan irows using irows_k_s_idx:",
		"SELECT * FROM ilog WHERE v = $1":                   "IndexScan ilog using ilog_v: (ilog.v = $1)",
		"SELECT * FROM irows WHERE s = 's1'":                "ViewScan irows",
		"SELECT * FROM iagg WHERE k + 1 = 3":                "ViewScan iagg",
	} {
		if plan := indexExplain(t, sdb, q); !strings.Contains(plan, want) {
			t.Errorf("EXPLAIN %s lacks %q:\n%s", q, want, plan)
		}
	}
	psqlLists := func(when string) {
		t.Helper()
		if _, err := exec.LookPath("psql"); err != nil {
			return
		}
		out := psqlScript(t, srv, "\\d iagg\n\\di\n")
		for _, want := range []string{`"iagg_k" btree (k)`, `"iagg_s_k" btree (s, k)`, "iagg_pkey", "irows_k_s_idx", "ilog_v", "imem_k"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: psql \\d iagg / \\di lack %q:\n%s", when, want, out)
			}
		}
	}
	psqlLists("before a restart")
	if rows, err := queryRows(sdb, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'ilog'"); err != nil || len(rows) != 2 {
		t.Errorf("pg_indexes of ilog: %v %v", rows, err)
	}

	// DROP INDEX: the plan falls back to the scan, lookups still agree.
	if err := keyedExec(sdb, "DROP INDEX ilog_s"); err != nil {
		t.Fatal(err)
	}
	if plan := indexExplain(t, sdb, "SELECT * FROM ilog WHERE s = 's1'"); !strings.Contains(plan, "ViewScan ilog") {
		t.Errorf("after DROP INDEX ilog_s:\n%s", plan)
	}

	// A graceful restart, then kill -9 amid writes: the indexes come back
	// from the catalog with their entries.
	srv.Restart(t)
	sdb = srv.Conn(t)
	indexCompare(t, sdb, pgc, rng, "after a restart")
	psqlLists("after a restart")
	for step := 0; step < 30; step++ {
		indexExecBoth(t, sdb, pgc, indexStmt(rng))
	}
	if err := keyedExec(sdb, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	srv.Kill9()
	srv.Restart(t)
	sdb = srv.Conn(t)
	indexCompare(t, sdb, pgc, rng, "after kill -9")
	if plan := indexExplain(t, sdb, "SELECT * FROM imem WHERE k = 1"); !strings.Contains(plan, "IndexScan imem using imem_k") {
		t.Errorf("after kill -9:\n%s", plan)
	}

	// Dropping a view drops its indexes (as PostgreSQL drops a table's).
	if err := keyedExec(sdb, "DROP MATERIALIZED VIEW ilog"); err != nil {
		t.Fatal(err)
	}
	if rows, err := queryRows(sdb, "SELECT indexname FROM pg_indexes WHERE indexname = 'ilog_v'"); err != nil || len(rows) != 0 {
		t.Errorf("ilog_v after DROP MATERIALIZED VIEW ilog: %v %v", rows, err)
	}
	if err := keyedExec(sdb, "CREATE INDEX ilog_v ON iagg (n)"); err != nil {
		t.Errorf("the name of a dropped view's index is free again: %v", err)
	}
}

// TestViewIndexErrors checks what CREATE INDEX and DROP INDEX refuse.
func TestViewIndexErrors(t *testing.T) {
	srv := StartServer(t, "")
	sdb := srv.Conn(t)
	for _, s := range []string{
		"CREATE TABLE t (a INT, b TEXT, j JSONB)",
		"CREATE MATERIALIZED VIEW v AS SELECT a, b, j FROM t",
		"CREATE INDEX v_a ON v (a)",
	} {
		if err := keyedExec(sdb, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, c := range []struct{ sql, code string }{
		{"CREATE INDEX v_x ON v (nope)", "42703"},
		{"CREATE INDEX v_a ON v (b)", "42P07"},
		{"CREATE INDEX v ON v (b)", "42P07"},
		{"CREATE INDEX t_a ON nope (a)", "42P01"},
		{"CREATE UNIQUE INDEX v_u ON v (a)", "0A000"},
		{"CREATE INDEX v_e ON v ((a + 1))", "0A000"},
		{"CREATE INDEX v_e ON v (lower(b))", "0A000"},
		{"CREATE INDEX v_h ON v USING hash (a)", "0A000"},
		{"CREATE INDEX v_p ON v (a) WHERE a > 0", "0A000"},
		{"CREATE INDEX v_d ON v (a DESC)", "0A000"},
		{"CREATE INDEX v_i ON v (a) INCLUDE (b)", "0A000"},
		{"CREATE INDEX v_j ON v (j)", "0A000"},
		{"CREATE INDEX CONCURRENTLY v_c ON v (a)", "0A000"},
		{"DROP INDEX nope", "42704"},
		{"DROP INDEX v", "42809"},
	} {
		err := keyedExec(sdb, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", c.sql, err, c.code)
		}
	}
	for _, s := range []string{"CREATE INDEX IF NOT EXISTS v_a ON v (b)", "DROP INDEX IF EXISTS nope", "DROP INDEX v_a", "CREATE INDEX v_a ON v (b)"} {
		if err := keyedExec(sdb, s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// TestViewIndexRestore restores a view from a savepoint taken before its
// index existed: the index is rebuilt from the restored rows, so lookups
// through it equal the same filters over a scan.
func TestViewIndexRestore(t *testing.T) {
	srv := StartServer(t, "")
	sdb := srv.Conn(t)
	for _, s := range []string{
		"CREATE TABLE t (a INT, b TEXT)",
		"CREATE MATERIALIZED VIEW v AS SELECT a, b, count(*) AS n FROM t GROUP BY a, b",
		"INSERT INTO t VALUES (1, 'x'), (2, 'y'), (1, 'x'), (3, 'z')",
		"CHECKPOINT",
		"CREATE SAVEPOINT sp FOR v",
		"CREATE INDEX v_a ON v (a)",
		"INSERT INTO t VALUES (1, 'w'), (2, 'y'), (4, 'q')",
		"CHECKPOINT",
		"RESTORE v FROM SAVEPOINT sp",
		"INSERT INTO t VALUES (2, 'v')",
		"CHECKPOINT",
	} {
		if err := keyedExec(sdb, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, a := range []int{1, 2, 3, 4, 5} {
		indexed := fmt.Sprintf("SELECT * FROM v WHERE a = %d", a)
		if plan := indexExplain(t, sdb, indexed); !strings.Contains(plan, "IndexScan v using v_a") {
			t.Fatalf("EXPLAIN %s:\n%s", indexed, plan)
		}
		got, err := queryRows(sdb, indexed)
		if err != nil {
			t.Fatal(err)
		}
		want, err := queryRows(sdb, fmt.Sprintf("SELECT * FROM v WHERE a + 0 = %d", a))
		if err != nil {
			t.Fatal(err)
		}
		if d := diffRows(got, want); d != "" {
			t.Errorf("a = %d after RESTORE: the index differs from a scan:\n%s", a, d)
		}
	}
}
