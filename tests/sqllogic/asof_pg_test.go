package sqllogic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// asofCase is an ASOF join and the PostgreSQL 15 query that means the same:
// a LATERAL subquery picking the best right rows, ties included (FETCH
// FIRST 1 ROW WITH TIES: streamdb matches every right row at the best ts).
type asofCase struct{ asof, pg string }

// asofLateral writes the PostgreSQL form of lhs ASOF JOIN rhs.
func asofLateral(cols, from, join, right, cond, order string) string {
	return fmt.Sprintf("SELECT %s FROM %s %s LATERAL (SELECT * FROM %s WHERE %s ORDER BY r.ts %s FETCH FIRST 1 ROW WITH TIES) r ON true",
		cols, from, join, right, cond, order)
}

var asofCases = []asofCase{
	{"SELECT l.id, l.k, l.ts, r.id AS rid, r.w FROM al l ASOF JOIN ar r ON l.k = r.k AND l.ts >= r.ts",
		asofLateral("l.id, l.k, l.ts, r.id AS rid, r.w", "al l", "JOIN", "ar r", "r.k = l.k AND r.ts <= l.ts", "DESC")},
	{"SELECT l.id, l.ts, r.id AS rid, r.ts AS rts FROM al l ASOF LEFT JOIN ar r ON l.k = r.k AND l.ts >= r.ts",
		asofLateral("l.id, l.ts, r.id AS rid, r.ts AS rts", "al l", "LEFT JOIN", "ar r", "r.k = l.k AND r.ts <= l.ts", "DESC")},
	{"SELECT l.id, r.id AS rid, r.ts AS rts FROM al l ASOF LEFT OUTER JOIN ar r ON r.k = l.k AND r.ts < l.ts",
		asofLateral("l.id, r.id AS rid, r.ts AS rts", "al l", "LEFT JOIN", "ar r", "r.k = l.k AND r.ts < l.ts", "DESC")},
	{"SELECT l.id, r.id AS rid, r.w FROM al l ASOF INNER JOIN ar r ON l.k = r.k AND l.ts <= r.ts",
		asofLateral("l.id, r.id AS rid, r.w", "al l", "JOIN", "ar r", "r.k = l.k AND r.ts >= l.ts", "ASC")},
	{"SELECT l.id, r.id AS rid, r.ts AS rts FROM al l ASOF LEFT JOIN ar r ON (l.k = r.k AND l.ts < r.ts)",
		asofLateral("l.id, r.id AS rid, r.ts AS rts", "al l", "LEFT JOIN", "ar r", "r.k = l.k AND r.ts > l.ts", "ASC")},
	// Append-only streams: equal left rows stay apart.
	{"SELECT l.k, l.ts, l.v, r.w FROM sl l ASOF LEFT JOIN sr r ON l.k = r.k AND l.ts >= r.ts",
		asofLateral("l.k, l.ts, l.v, r.w", "sl l", "LEFT JOIN", "sr r", "r.k = l.k AND r.ts <= l.ts", "DESC")},
	// Timestamps computed on both sides: the best right row by an expression.
	{"SELECT l.id, r.id AS rid FROM al l ASOF JOIN ar r ON l.k = r.k AND TIMESTAMP '2026-01-01 00:00:00' + l.ts * INTERVAL '1 minute' >= TIMESTAMP '2026-01-01 00:00:00' + r.ts * INTERVAL '90 seconds'",
		asofLateral("l.id, r.id AS rid", "al l", "JOIN", "ar r", "r.k = l.k AND TIMESTAMP '2026-01-01 00:00:00' + l.ts * INTERVAL '1 minute' >= TIMESTAMP '2026-01-01 00:00:00' + r.ts * INTERVAL '90 seconds'", "DESC")},
	// Aggregating over an ASOF join, with an expression on the left.
	{"SELECT l.k, count(*) AS n, sum(r.w) AS sw FROM al l ASOF LEFT JOIN ar r ON l.k = r.k AND l.ts + 1 > r.ts GROUP BY l.k",
		"SELECT l.k, count(*) AS n, sum(r.w) AS sw FROM al l LEFT JOIN LATERAL (SELECT * FROM ar r WHERE r.k = l.k AND l.ts + 1 > r.ts ORDER BY r.ts DESC FETCH FIRST 1 ROW WITH TIES) r ON true GROUP BY l.k"},
}

var asofDDL = []string{
	"CREATE TABLE al (id INT PRIMARY KEY, k INT, ts INT, v INT)",
	"CREATE TABLE ar (id INT PRIMARY KEY, k INT, ts INT, w INT)",
	"CREATE TABLE sl (k INT, ts INT, v INT)",
	"CREATE TABLE sr (k INT, ts INT, w INT)",
}

// asofStmt generates one random write: inserts, upserts and deletes on the
// keyed tables, inserts on the append-only ones. Keys and times come from
// small ranges, so right rows tie on ts and left rows repeat.
func asofStmt(rng *rand.Rand) string {
	val := func(n int) string {
		if rng.IntN(15) == 0 {
			return "NULL"
		}
		return fmt.Sprint(rng.IntN(n))
	}
	keyed := func() string {
		var rows []string
		seen := map[int]bool{}
		for n := 1 + rng.IntN(3); len(rows) < n; {
			id := rng.IntN(30)
			if seen[id] {
				continue
			}
			seen[id] = true
			rows = append(rows, fmt.Sprintf("(%d, %s, %s, %d)", id, val(3), val(12), rng.IntN(100)))
		}
		return strings.Join(rows, ", ")
	}
	tbl := []string{"al", "ar"}[rng.IntN(2)]
	switch rng.IntN(10) {
	case 0, 1, 2:
		return "INSERT INTO " + tbl + " VALUES " + keyed() + " ON CONFLICT (id) DO NOTHING"
	case 3, 4:
		return "INSERT INTO " + tbl + " VALUES " + keyed() + " ON CONFLICT (id) DO UPDATE SET ts = EXCLUDED.ts, k = EXCLUDED.k"
	case 5:
		return fmt.Sprintf("DELETE FROM %s WHERE id = %d", tbl, rng.IntN(30))
	case 6:
		return fmt.Sprintf("DELETE FROM %s WHERE ts > %d", tbl, 8+rng.IntN(6))
	default:
		s := []string{"sl", "sr"}[rng.IntN(2)]
		var rows []string
		for n := 1 + rng.IntN(3); len(rows) < n; {
			rows = append(rows, fmt.Sprintf("(%s, %s, %d)", val(3), val(10), rng.IntN(3)))
		}
		return "INSERT INTO " + s + " VALUES " + strings.Join(rows, ", ")
	}
}

// asofSetup creates the tables on both and the views on streamdb.
func asofSetup(t *testing.T, sdb, pgc *pgx.Conn) {
	for _, s := range asofDDL {
		if err := keyedExec(sdb, s); err != nil {
			t.Fatalf("streamdb: %s: %v", s, err)
		}
		if err := keyedExec(pgc, s); err != nil {
			t.Fatalf("PostgreSQL: %s: %v", s, err)
		}
	}
	for i, c := range asofCases {
		if err := keyedExec(sdb, fmt.Sprintf("CREATE MATERIALIZED VIEW asof%d AS %s", i, c.asof)); err != nil {
			t.Fatalf("CREATE MATERIALIZED VIEW asof%d: %v", i, err)
		}
	}
}

// asofCompare checks every view and every batch query against PostgreSQL.
func asofCompare(t *testing.T, sdb, pgc *pgx.Conn, when string, batch bool) {
	t.Helper()
	for i, c := range asofCases {
		want, err := queryRows(pgc, c.pg)
		if err != nil {
			t.Fatalf("PostgreSQL: %s: %v", c.pg, err)
		}
		got, err := queryRows(sdb, fmt.Sprintf("SELECT * FROM asof%d", i))
		if err != nil {
			t.Fatalf("streamdb: view asof%d: %v", i, err)
		}
		if diff := diffRows(got, want); diff != "" {
			t.Fatalf("%s: view asof%d (%s) differs from PostgreSQL:\n%s", when, i, c.asof, diff)
		}
		if !batch {
			continue
		}
		if got, err = queryRows(sdb, c.asof); err != nil {
			t.Fatalf("streamdb: %s: %v", c.asof, err)
		}
		if diff := diffRows(got, want); diff != "" {
			t.Fatalf("%s: batch query %s differs from PostgreSQL:\n%s", when, c.asof, diff)
		}
	}
}

// TestAsofJoinPG runs random inserts, upserts and deletes against streamdb
// and PostgreSQL 15; after each, every ASOF join of asofCases, as a view
// and as a batch query, must equal its LATERAL form on PostgreSQL.
func TestAsofJoinPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	asofSetup(t, sdb, pgc)
	rng := rand.New(rand.NewPCG(33, 1))
	rows := 0
	for step := 0; step < 80 && !t.Failed(); step++ {
		stmt := asofStmt(rng)
		serr, perr := keyedExec(sdb, stmt), keyedExec(pgc, stmt)
		if got, want := errText(serr), errText(perr); got != want {
			t.Fatalf("step %d: %s\n  streamdb:   %q\n  PostgreSQL: %q", step, stmt, got, want)
		}
		if err := keyedExec(sdb, "CHECKPOINT"); err != nil {
			t.Fatal(err)
		}
		asofCompare(t, sdb, pgc, fmt.Sprintf("step %d, after %s", step, stmt), step%4 == 3)
	}
	for _, c := range asofCases {
		got, err := queryRows(pgc, c.pg)
		if err != nil {
			t.Fatal(err)
		}
		rows += len(got)
	}
	if rows < 50 {
		t.Errorf("the cases hold %d rows in all at the end: the generator should fill them", rows)
	}
}

// TestAsofJoinErrors checks what ASOF joins refuse and the plan they get.
func TestAsofJoinErrors(t *testing.T) {
	srv := StartServer(t, "")
	sdb := srv.Conn(t)
	for _, s := range asofDDL {
		if err := keyedExec(sdb, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ sql, code string }{
		{"SELECT * FROM al l ASOF RIGHT JOIN ar r ON l.k = r.k AND l.ts >= r.ts", "0A000"},
		{"SELECT * FROM al l ASOF FULL JOIN ar r ON l.k = r.k AND l.ts >= r.ts", "0A000"},
		{"SELECT * FROM al ASOF JOIN ar USING (k)", "0A000"},
		{"SELECT * FROM al l ASOF JOIN ar r ON l.k = r.k", "0A000"},
		{"SELECT * FROM al l ASOF JOIN ar r ON l.k = r.k AND l.ts >= r.ts AND l.v > r.ts", "0A000"},
		{"SELECT * FROM al l ASOF JOIN ar r ON l.k = r.k AND l.ts >= r.ts OR l.v = 1", "0A000"},
		{"SELECT * FROM al l ASOF JOIN ar r ON l.k = r.k AND l.ts >= r.ts AND l.v = 3", "0A000"},
		{"SELECT * FROM al l ASOF JOIN ar r ON l.k = r.k AND l.ts >= l.v", "0A000"},
		{"SELECT * FROM al l ASOF JOIN ar r WHERE l.k = r.k", "0A000"},
		{"SELECT * FROM al l ASOF JOIN ar r ON l.k = r.k AND l.ts >= r.nope", "42703"},
	} {
		err := keyedExec(sdb, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", c.sql, err, c.code)
		}
	}
	// "AS asof" keeps the word an alias, as in PostgreSQL.
	if err := keyedExec(sdb, "SELECT asof.k FROM al AS asof JOIN ar ON asof.k = ar.k"); err != nil {
		t.Errorf("alias asof: %v", err)
	}
	plan, err := queryRows(sdb, "EXPLAIN SELECT l.id, r.w FROM al l ASOF LEFT JOIN ar r ON l.k = r.k AND l.ts >= r.ts")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	for _, want := range []string{"HashJoin Left left=[l.k] right=[r.k]", "partition=[l.id, l.k, l.ts, l.v] order=[r.ts DESC] funcs=[rank()]", "Filter (asof_rank = 1)"} {
		if !strings.Contains(text, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, text)
		}
	}
}

// TestAsofJoinKill9 writes random statements with CHECKPOINTs among them
// and kill -9s the server mid-stream, three times; after each restart every
// ASOF view must equal its LATERAL form over what PostgreSQL 15 was given:
// the statements streamdb acknowledged, and the one in flight if streamdb
// made it durable.
func TestAsofJoinKill9(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	asofSetup(t, sdb, pgc)
	rng := rand.New(rand.NewPCG(33, 9))
	tables := []string{"al", "ar", "sl", "sr"}
	differ := func() bool {
		for _, tbl := range tables {
			if diffWithPG(t, sdb, pgc, "SELECT * FROM "+tbl) != "" {
				return true
			}
		}
		return false
	}
	for round := 0; round < 3; round++ {
		stmts := make([]string, 3000)
		for i := range stmts {
			if i%40 == 39 {
				stmts[i] = "CHECKPOINT"
				continue
			}
			stmts[i] = asofStmt(rng)
		}
		type result struct {
			acked    []keyedAck
			inflight string
		}
		done := make(chan result, 1)
		go func(c *pgx.Conn) {
			var r result
			for _, s := range stmts {
				err := keyedExec(c, s)
				var pe *pgconn.PgError
				if err != nil && !errors.As(err, &pe) {
					r.inflight = s
					break
				}
				r.acked = append(r.acked, keyedAck{s, errText(err)})
			}
			done <- r
		}(sdb)
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		srv.Kill9()
		r := <-done
		if r.inflight == "" {
			t.Fatalf("round %d: all %d statements ran before the kill", round, len(stmts))
		}
		for _, a := range r.acked {
			if a.sql == "CHECKPOINT" {
				continue
			}
			if got := errText(keyedExec(pgc, a.sql)); got != a.err {
				t.Fatalf("round %d: %s\n  streamdb:   %q\n  PostgreSQL: %q", round, a.sql, a.err, got)
			}
		}
		srv.Restart(t)
		sdb = srv.Conn(t)
		if r.inflight != "CHECKPOINT" && differ() {
			if err := keyedExec(pgc, r.inflight); err != nil {
				t.Fatalf("round %d: the tables differ and the statement in flight (%s) fails on PostgreSQL: %v", round, r.inflight, err)
			}
		}
		for _, tbl := range tables {
			if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM "+tbl); diff != "" {
				t.Fatalf("round %d: table %s differs from PostgreSQL:\n%s", round, tbl, diff)
			}
		}
		if err := keyedExec(sdb, "CHECKPOINT"); err != nil {
			t.Fatal(err)
		}
		asofCompare(t, sdb, pgc, fmt.Sprintf("round %d, after kill -9 (in flight: %s)", round, r.inflight), true)
		t.Logf("round %d: %d statements acknowledged, killed during %s", round, len(r.acked), r.inflight)
	}
}
