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

// keyedViews are the views TestKeyedTablesPG and TestKeyedTableKill9
// keep over the keyed tables kt and dim: a grouping, joins (inner, outer,
// grouped), top-N overall and per group, a filter.
var keyedViews = []string{
	"SELECT g, count(*) AS n, sum(v) AS sv, min(v) AS mn, max(s) AS mx FROM kt GROUP BY g",
	"SELECT d.name, count(*) AS n, sum(kt.v) AS sv FROM kt JOIN dim d ON kt.g = d.g GROUP BY d.name",
	"SELECT kt.k, kt.v, d.name FROM kt JOIN dim d ON kt.g = d.g",
	"SELECT d.g, d.name, kt.k FROM dim d LEFT JOIN kt ON kt.g = d.g",
	"SELECT k, v FROM kt ORDER BY v DESC, k LIMIT 3",
	"SELECT k, g, v FROM (SELECT k, g, v, row_number() OVER (PARTITION BY g ORDER BY v DESC, k) AS rn FROM kt) x WHERE rn <= 2",
	"SELECT k, s FROM kt WHERE v > 50",
	"SELECT count(*) AS n, count(DISTINCT g) AS dg, sum(v) AS sv FROM kt",
}

var keyedDDL = []string{
	"CREATE TABLE kt (k INT PRIMARY KEY, g INT, v BIGINT, s TEXT)",
	"CREATE TABLE dim (g INT, name TEXT, PRIMARY KEY (g))",
}

// keyedStmt generates one random write to kt or dim.
func keyedStmt(rng *rand.Rand) string {
	key := func() int { return rng.IntN(25) }
	row := func(k int) string {
		return fmt.Sprintf("(%d, %d, %d, 's%d')", k, rng.IntN(4), rng.IntN(100), rng.IntN(5))
	}
	rows := func(distinct bool) string {
		n := 1 + rng.IntN(3)
		seen := map[int]bool{}
		var out []string
		for len(out) < n {
			k := key()
			if distinct && seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, row(k))
		}
		return strings.Join(out, ", ")
	}
	switch rng.IntN(12) {
	case 0, 1, 2:
		return "INSERT INTO kt VALUES " + rows(rng.IntN(4) > 0)
	case 3:
		return "INSERT INTO kt VALUES " + rows(false) + " ON CONFLICT (k) DO NOTHING"
	case 4, 5:
		return "INSERT INTO kt VALUES " + rows(rng.IntN(5) > 0) + " ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, s = kt.s || EXCLUDED.s"
	case 6:
		return fmt.Sprintf("INSERT INTO kt VALUES %s ON CONFLICT (k) DO UPDATE SET g = EXCLUDED.g WHERE kt.v < %d", rows(true), rng.IntN(100))
	case 7:
		return fmt.Sprintf("UPDATE kt SET v = v + %d WHERE g = %d", rng.IntN(30)-10, rng.IntN(4))
	case 8:
		return fmt.Sprintf("UPDATE kt SET g = %d, s = 'u' WHERE k < %d AND v > %d", rng.IntN(4), key(), rng.IntN(100))
	case 9:
		if rng.IntN(2) == 0 {
			return fmt.Sprintf("DELETE FROM kt WHERE v < %d", rng.IntN(40))
		}
		return fmt.Sprintf("DELETE FROM kt WHERE k = %d", key())
	case 10:
		// One row's key moves: no order of rows decides the outcome.
		return fmt.Sprintf("UPDATE kt SET k = %d WHERE k = %d", key(), key())
	default:
		switch rng.IntN(3) {
		case 0:
			return fmt.Sprintf("INSERT INTO dim VALUES (%d, 'n%d') ON CONFLICT (g) DO UPDATE SET name = EXCLUDED.name", rng.IntN(5), rng.IntN(3))
		case 1:
			return fmt.Sprintf("DELETE FROM dim WHERE g = %d", rng.IntN(5))
		}
		return fmt.Sprintf("UPDATE dim SET name = name || '+' WHERE g = %d", rng.IntN(5))
	}
}

// keyedSetup starts PostgreSQL and streamdb, runs keyedDDL and ddl on
// both and makes keyedViews materialized views kv<i> on streamdb.
func keyedSetup(t *testing.T, ddl ...string) (*PG, *Server, *pgx.Conn, *pgx.Conn) {
	t.Helper()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, s := range append(append([]string(nil), keyedDDL...), ddl...) {
		if err := keyedExec(sdb, s); err != nil {
			t.Fatalf("streamdb: %s: %v", s, err)
		}
		if err := keyedExec(pgc, s); err != nil {
			t.Fatalf("PostgreSQL: %s: %v", s, err)
		}
	}
	for i, q := range keyedViews {
		if err := keyedExec(sdb, fmt.Sprintf("CREATE MATERIALIZED VIEW kv%d AS %s", i, q)); err != nil {
			t.Fatalf("CREATE MATERIALIZED VIEW kv%d: %v", i, err)
		}
	}
	return pg, srv, sdb, pgc
}

// keyedExec runs sql and returns its error (nil on success).
func keyedExec(c *pgx.Conn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Exec(ctx, sql)
	return err
}

// errText is an error's SQLSTATE, message and DETAIL, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + ": " + pe.Message + " / " + pe.Detail
	}
	return err.Error()
}

// TestKeyedTablesPG runs a random sequence of INSERT, upserts, UPDATE and
// DELETE on tables with a primary key against streamdb and PostgreSQL 15:
// each statement must succeed on both or fail on both with the same
// SQLSTATE, message and DETAIL; after each, the tables and every view of
// keyedViews (materialized on streamdb, a query on PostgreSQL) must hold
// the same rows.
func TestKeyedTablesPG(t *testing.T) {
	t.Parallel()
	_, _, sdb, pgc := keyedSetup(t)
	rng := rand.New(rand.NewPCG(30, 1))
	failed, steps := 0, 150
	for step := 0; step < steps && !t.Failed(); step++ {
		stmt := keyedStmt(rng)
		serr, perr := keyedExec(sdb, stmt), keyedExec(pgc, stmt)
		if got, want := errText(serr), errText(perr); got != want {
			t.Fatalf("step %d: %s\n  streamdb:   %q\n  PostgreSQL: %q", step, stmt, got, want)
		}
		if perr != nil {
			failed++
		}
		keyedCompare(t, sdb, pgc, fmt.Sprintf("step %d: after %s", step, stmt))
	}
	// The same with parameters (the extended protocol's typed $n).
	for _, p := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO kt VALUES ($1, $2, $3, $4) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v + $5", []any{3, 1, 10, "p", 7}},
		{"INSERT INTO kt VALUES ($1, $2, $3, $4) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v + $5", []any{3, 2, 11, "q", 1}},
		{"UPDATE kt SET v = v * $1, s = $3 WHERE k < $2", []any{2, 10, "w"}},
		{"DELETE FROM kt WHERE k = $1 OR v > $2", []any{4, 150}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, serr := sdb.Exec(ctx, p.sql, p.args...)
		_, perr := pgc.Exec(ctx, p.sql, p.args...)
		cancel()
		if got, want := errText(serr), errText(perr); got != want {
			t.Fatalf("%s %v\n  streamdb:   %q\n  PostgreSQL: %q", p.sql, p.args, got, want)
		}
		if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM kt"); diff != "" {
			t.Fatalf("after %s %v, kt differs:\n%s", p.sql, p.args, diff)
		}
	}
	if failed == 0 || failed > steps/2 {
		t.Errorf("%d of %d statements failed on both: the generator should make some, not most, fail", failed, steps)
	}
	t.Logf("%d statements, %d refused alike by both (23505, 21000, ...)", steps, failed)
}
