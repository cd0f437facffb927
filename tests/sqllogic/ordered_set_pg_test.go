package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// osCase is a query run in streamdb (sdb) and PostgreSQL 15 (pg: the same
// but for the alias PostgreSQL 15 needs on a subquery in FROM); view says
// it also runs as a materialized view, compared after every round.
type osCase struct {
	sdb, pg string
	view    bool
}

var osCases = []osCase{
	{sdb: "SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY f) AS c5, percentile_cont(0) WITHIN GROUP (ORDER BY i) AS c0, " +
		"percentile_cont(1) WITHIN GROUP (ORDER BY f) AS c1, percentile_cont(0.333) WITHIN GROUP (ORDER BY i) AS c3 FROM os GROUP BY k", view: true},
	{sdb: "SELECT k, percentile_disc(0.5) WITHIN GROUP (ORDER BY i) AS d5, percentile_disc(0.333) WITHIN GROUP (ORDER BY f) AS d3, " +
		"percentile_disc(0) WITHIN GROUP (ORDER BY f) AS d0, percentile_disc(1) WITHIN GROUP (ORDER BY i) AS d1 FROM os GROUP BY k", view: true},
	{sdb: "SELECT k, mode() WITHIN GROUP (ORDER BY i) AS m, mode() WITHIN GROUP (ORDER BY f DESC) AS md, count(*) AS n FROM os GROUP BY k", view: true},
	{sdb: "SELECT k, percentile_cont(0.25) WITHIN GROUP (ORDER BY f DESC) AS cd, percentile_disc(0.333) WITHIN GROUP (ORDER BY i DESC NULLS LAST) AS dd, " +
		"percentile_cont(0.4) WITHIN GROUP (ORDER BY iv) AS ci, percentile_disc(0.6) WITHIN GROUP (ORDER BY iv) AS di FROM os GROUP BY k", view: true},
	// One group, empty before the first round.
	{sdb: "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f) AS c, percentile_disc(0.5) WITHIN GROUP (ORDER BY i) AS d, " +
		"mode() WITHIN GROUP (ORDER BY i) AS m FROM os", view: true},
	// Retracting inputs: an outer join whose NULL-extended rows retract
	// when a match arrives (the left values' multiplicities change), and an
	// aggregate over an aggregate (a group's old sum retracts as it grows),
	// the inner query without an alias.
	{sdb: "SELECT os.k, percentile_cont(0.5) WITHIN GROUP (ORDER BY os.f) AS cf, percentile_disc(0.333) WITHIN GROUP (ORDER BY r.w) AS dw, " +
		"mode() WITHIN GROUP (ORDER BY os.i) AS mi, mode() WITHIN GROUP (ORDER BY r.w) AS mw FROM os LEFT JOIN osr r ON os.i = r.k GROUP BY os.k", view: true},
	{sdb: "SELECT n, percentile_cont(0.5) WITHIN GROUP (ORDER BY s) AS cs, percentile_disc(0.25) WITHIN GROUP (ORDER BY s) AS ds, " +
		"mode() WITHIN GROUP (ORDER BY s) AS ms, count(*) AS c FROM (SELECT k, count(*) AS n, sum(i) AS s FROM os GROUP BY k) GROUP BY n",
		pg: "SELECT n, percentile_cont(0.5) WITHIN GROUP (ORDER BY s) AS cs, percentile_disc(0.25) WITHIN GROUP (ORDER BY s) AS ds, " +
			"mode() WITHIN GROUP (ORDER BY s) AS ms, count(*) AS c FROM (SELECT k, count(*) AS n, sum(i) AS s FROM os GROUP BY k) AS x GROUP BY n", view: true},
	// A view over a view (osa is a view in both systems).
	{sdb: "SELECT n, percentile_disc(0.5) WITHIN GROUP (ORDER BY s) AS ds, mode() WITHIN GROUP (ORDER BY s) AS ms FROM osa GROUP BY n", view: true},
	// A subquery in FROM without an alias, and DOUBLE as a type name.
	{sdb: "SELECT count(*) AS n, sum(x) AS s FROM (SELECT i::double AS x FROM os WHERE f > 0) WHERE x > 3",
		pg: "SELECT count(*) AS n, sum(x) AS s FROM (SELECT i::double precision AS x FROM os WHERE f > 0) AS q WHERE x > 3", view: true},
	{sdb: "SELECT * FROM (SELECT k, CAST(i AS DOUBLE) / 2 AS h FROM os) , (SELECT 1 AS one) WHERE h < 2",
		pg: "SELECT * FROM (SELECT k, CAST(i AS DOUBLE PRECISION) / 2 AS h FROM os) AS a, (SELECT 1 AS one) AS b WHERE h < 2"},
	{sdb: "SELECT * FROM (SELECT 1 AS a)", pg: "SELECT * FROM (SELECT 1 AS a) AS x"},
}

// TestOrderedSetPG checks percentile_cont, percentile_disc and mode()
// WITHIN GROUP (ORDER BY ...), subqueries in FROM without an alias and
// DOUBLE as a type against PostgreSQL 15: as batch queries with GROUP BY
// and as materialized views, over generated integers, doubles and
// intervals with NULLs, duplicates and groups whose values are all NULL,
// with retracting view inputs (an outer join, an aggregate over an
// aggregate, a view over a view), across a graceful restart and a kill -9
// (the views' per-value state is read back and later rows retract from
// it). Errors are compared with PostgreSQL's SQLSTATEs.
func TestOrderedSetPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	execAll(t, sdb, "CREATE TABLE os (k INT, i BIGINT, f DOUBLE, iv INTERVAL)", "CREATE TABLE osr (k BIGINT, w INT)",
		"CREATE MATERIALIZED VIEW osa AS SELECT k, count(*) AS n, sum(i) AS s FROM os GROUP BY k")
	execAll(t, pgc, "CREATE TABLE os (k INT, i BIGINT, f DOUBLE PRECISION, iv INTERVAL)", "CREATE TABLE osr (k BIGINT, w INT)",
		"CREATE VIEW osa AS SELECT k, count(*) AS n, sum(i) AS s FROM os GROUP BY k")
	// The catalog names DOUBLE double precision.
	if got := rowSet(t, sdb, "SELECT data_type FROM information_schema.columns WHERE table_name = 'os' AND column_name = 'f'"); got != "double precision" {
		t.Errorf("information_schema.columns: os.f is %q, want double precision", got)
	}
	for i, c := range osCases {
		if c.view {
			execAll(t, sdb, fmt.Sprintf("CREATE MATERIALIZED VIEW osv%d AS %s", i, c.sdb))
		}
	}
	r := rand.New(rand.NewPCG(33, 5))
	insert := func(c *pgx.Conn, rows int) {
		var os, osr []string
		null := func(s string) string {
			if r.IntN(6) == 0 {
				return "NULL"
			}
			return s
		}
		for range rows {
			k := r.IntN(8)
			if k == 7 { // a group whose values are all NULL
				os = append(os, "(7, NULL, NULL, NULL)")
				continue
			}
			os = append(os, fmt.Sprintf("(%d, %s, %s, %s)", k, null(fmt.Sprint(r.IntN(12))), null(fmt.Sprint(float64(r.IntN(40))/4-3)),
				null(fmt.Sprintf("'%d days %d minutes'", r.IntN(3), r.IntN(90)))))
			if r.IntN(3) == 0 {
				osr = append(osr, fmt.Sprintf("(%d, %s)", r.IntN(14), null(fmt.Sprint(r.IntN(6)))))
			}
		}
		stmts := []string{"INSERT INTO os VALUES " + strings.Join(os, ", ")}
		if len(osr) > 0 {
			stmts = append(stmts, "INSERT INTO osr VALUES "+strings.Join(osr, ", "))
		}
		execAll(t, c, stmts...)
		execAll(t, pgc, stmts...)
	}
	check := func(c *pgx.Conn, when string) {
		t.Helper()
		execAll(t, c, "CHECKPOINT", "CHECKPOINT")
		for i, oc := range osCases {
			pq := oc.pg
			if pq == "" {
				pq = oc.sdb
			}
			want := rowSet(t, pgc, pq)
			if got := rowSet(t, c, oc.sdb); got != want {
				t.Errorf("%s: batch query differs from PostgreSQL\n  query: %s\n  streamdb:   %s\n  PostgreSQL: %s", when, oc.sdb, got, want)
			}
			if !oc.view {
				continue
			}
			for deadline := time.Now().Add(30 * time.Second); ; {
				got := rowSet(t, c, fmt.Sprintf("SELECT * FROM osv%d", i))
				if got == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: view osv%d differs from PostgreSQL\n  query: %s\n  view:       %s\n  PostgreSQL: %s", when, i, oc.sdb, got, want)
				}
				execAll(t, c, "CHECKPOINT")
			}
		}
	}
	check(sdb, "before any row")
	insert(sdb, 60)
	check(sdb, "first rows")
	insert(sdb, 120)
	check(sdb, "second rows")

	srv.Restart(t)
	sdb = srv.Conn(t)
	check(sdb, "after a restart")
	insert(sdb, 80)
	execAll(t, sdb, "CHECKPOINT")
	insert(sdb, 80) // committed after the checkpoint: replayed after the crash
	srv.Kill9()
	srv.Restart(t)
	sdb = srv.Conn(t)
	check(sdb, "after kill -9")
	insert(sdb, 100)
	check(sdb, "rows after kill -9")

	// Output column names are PostgreSQL's.
	names := func(c *pgx.Conn, q string) string {
		res := c.PgConn().ExecParams(context.Background(), q, nil, nil, nil, nil).Read()
		if res.Err != nil {
			t.Fatalf("%s: %v", q, res.Err)
		}
		var ns []string
		for _, f := range res.FieldDescriptions {
			ns = append(ns, f.Name)
		}
		return strings.Join(ns, ",")
	}
	nq := "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f), percentile_disc(0.5) WITHIN GROUP (ORDER BY i), mode() WITHIN GROUP (ORDER BY i), 1.5::double FROM os"
	if got, want := names(sdb, nq), names(pgc, strings.Replace(nq, "::double", "::double precision", 1)); got != want {
		t.Errorf("column names %s, PostgreSQL's %s", got, want)
	}

	// Plans print the aggregate as written.
	plan := rowSet(t, sdb, "EXPLAIN SELECT k, percentile_disc(0.25) WITHIN GROUP (ORDER BY f DESC) FROM os GROUP BY k")
	if !strings.Contains(plan, "percentile_disc(0.25) WITHIN GROUP (ORDER BY") || !strings.Contains(plan, "DESC)") {
		t.Errorf("EXPLAIN does not show percentile_disc(0.25) WITHIN GROUP (ORDER BY ... DESC):\n%s", plan)
	}

	// Errors: the SQLSTATE PostgreSQL gives, and messages that name the
	// aggregate (never the internal function it is rewritten to).
	for _, e := range []struct{ sql, code string }{
		{"SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY f) FROM os", ""},
		{"SELECT percentile_disc(-0.1) WITHIN GROUP (ORDER BY i) FROM os", ""},
		{"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY iv::text) FROM os", ""},
		{"SELECT count(i) WITHIN GROUP (ORDER BY i) FROM os", ""},
		{"SELECT k FROM os WHERE percentile_cont(0.5) WITHIN GROUP (ORDER BY f) > 0", ""},
		{"SELECT mode() WITHIN GROUP (ORDER BY i) OVER () FROM os", ""},
		{"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY max(f)) FROM os", ""},
		{"SELECT x.a FROM (SELECT 1 AS a)", "42P01"}, // PostgreSQL 15 wants an alias (42601); 16 says 42P01
		// PostgreSQL takes an array of fractions (a double precision[]
		// result, a type streamdb does not have): refused clearly.
		{"SELECT percentile_cont(ARRAY[0.25, 0.5]) WITHIN GROUP (ORDER BY f) FROM os", "0A000"},
		{"SELECT percentile_cont(k / 10.0) WITHIN GROUP (ORDER BY f) FROM os GROUP BY k", "0A000"},
	} {
		want := e.code
		if want == "" {
			_, err := pgc.Exec(context.Background(), e.sql)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("PostgreSQL accepts %s: %v", e.sql, err)
			}
			want = pe.Code
		}
		_, err := sdb.Exec(context.Background(), e.sql)
		var se *pgconn.PgError
		if !errors.As(err, &se) || se.Code != want {
			t.Errorf("%s: %v, want SQLSTATE %s", e.sql, err, want)
		} else if strings.Contains(se.Message, "pg_within_group") || strings.Contains(se.Message, "max") {
			t.Errorf("%s: message %q names the internal rewrite", e.sql, se.Message)
		}
	}
	// A batch query's memory budget counts the values kept.
	execAll(t, sdb, "SET work_mem = 1024")
	_, err := sdb.Exec(context.Background(), "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY g) FROM generate_series(1, 200000) AS s(g)")
	var me *pgconn.PgError
	if !errors.As(err, &me) || me.Code != "53200" {
		t.Errorf("percentile_cont over 200000 values with work_mem = 1MB: %v, want 53200", err)
	}
	execAll(t, sdb, "RESET work_mem", "SELECT 1") // the server is still up
}
