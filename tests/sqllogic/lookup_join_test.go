package sqllogic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lookupDDL is a stream of orders and a dimension table with a key.
var lookupDDL = []string{
	"CREATE TABLE orders (id BIGINT, k BIGINT, amt BIGINT)",
	"CREATE TABLE dim (k BIGINT PRIMARY KEY, name VARCHAR)",
}

// lookupExec runs each statement, failing the test on an error.
func lookupExec(t *testing.T, c *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if err := keyedExec(c, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// lookupWant compares the rows of q with want (any order).
func lookupWant(t *testing.T, c *pgx.Conn, q string, want ...string) {
	t.Helper()
	got, err := queryRows(c, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if diff := diffRows(got, want); diff != "" {
		t.Errorf("%s:\n%s", q, diff)
	}
}

// TestLookupJoin: a view over a stream joined FOR SYSTEM_TIME AS OF
// PROCTIME() with a keyed table shows each order with the dimension's row
// as it was when the order was processed; changing the dimension later
// changes no row already there, while the batch query joins with the
// table's current rows. The LEFT form pads orders without a dimension row.
func TestLookupJoin(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	lookupExec(t, c, lookupDDL...)
	lookupExec(t, c,
		"INSERT INTO dim VALUES (1, 'a'), (2, 'b')",
		`CREATE MATERIALIZED VIEW v AS SELECT o.id, o.k, d.name FROM orders o
		   JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() AS d ON o.k = d.k`,
		`CREATE MATERIALIZED VIEW lv AS SELECT o.id, d.name, o.amt * 2 AS amt2 FROM orders o
		   LEFT JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() d ON o.k = d.k WHERE o.amt > 0`,
		`CREATE MATERIALIZED VIEW agg AS SELECT d.name, count(*) AS n, sum(o.amt) AS total FROM orders o
		   JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() d ON d.k = o.k AND d.name <> 'x' GROUP BY d.name`,
		"INSERT INTO orders VALUES (1, 1, 10), (2, 2, 20), (3, 3, 30), (4, NULL, 40)",
		"CHECKPOINT",
		"UPDATE dim SET name = 'a2' WHERE k = 1",
		"INSERT INTO dim VALUES (3, 'c')",
		"DELETE FROM dim WHERE k = 2",
		"CHECKPOINT",
	)
	// Nothing already emitted changed with the dimension.
	lookupWant(t, c, "SELECT * FROM v", "'1' | '1' | 'a'", "'2' | '2' | 'b'")
	lookupExec(t, c, "INSERT INTO orders VALUES (5, 1, 50), (6, 2, 60), (7, 3, 70), (8, 1, -1)", "CHECKPOINT")
	lookupWant(t, c, "SELECT * FROM v",
		"'1' | '1' | 'a'", "'2' | '2' | 'b'", "'5' | '1' | 'a2'", "'7' | '3' | 'c'", "'8' | '1' | 'a2'")
	lookupWant(t, c, "SELECT * FROM lv",
		"'1' | 'a' | '20'", "'2' | 'b' | '40'", "'3' | NULL | '60'", "'4' | NULL | '80'",
		"'5' | 'a2' | '100'", "'6' | NULL | '120'", "'7' | 'c' | '140'")
	lookupWant(t, c, "SELECT * FROM agg",
		"'a' | '1' | '10'", "'b' | '1' | '20'", "'a2' | '2' | '49'", "'c' | '1' | '70'")
	// The batch query joins with the table as it is now.
	lookupWant(t, c, `SELECT o.id, o.k, d.name FROM orders o
		   JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() AS d ON o.k = d.k`,
		"'1' | '1' | 'a2'", "'3' | '3' | 'c'", "'5' | '1' | 'a2'", "'7' | '3' | 'c'", "'8' | '1' | 'a2'")
	lookupWant(t, c, `SELECT o.id, d.name FROM orders o
		   LEFT JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() d ON o.k = d.k WHERE o.id IN (2, 4, 6)`,
		"'2' | NULL", "'4' | NULL", "'6' | NULL")

	// The dimension's rows are the view's state: a restart keeps them.
	srv.Restart(t)
	c = srv.Conn(t)
	lookupExec(t, c, "UPDATE dim SET name = 'c2' WHERE k = 3", "INSERT INTO orders VALUES (9, 3, 90), (10, 1, 100)", "CHECKPOINT")
	lookupWant(t, c, "SELECT * FROM v WHERE id >= 7",
		"'7' | '3' | 'c'", "'8' | '1' | 'a2'", "'9' | '3' | 'c2'", "'10' | '1' | 'a2'")

	// A view made over existing rows joins them with the tables as they
	// are (its backfill's barrier), as the batch query does; lookup joins
	// chain.
	chain := `SELECT o.id, d.name, e.label FROM orders o
		   JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() d ON o.k = d.k
		   LEFT JOIN dim3 FOR SYSTEM_TIME AS OF PROCTIME() e ON e.k = o.k`
	lookupExec(t, c, "CREATE TABLE dim3 (k BIGINT PRIMARY KEY, label VARCHAR)", "INSERT INTO dim3 VALUES (1, 'one'), (3, 'three')",
		"CREATE MATERIALIZED VIEW chain AS "+chain, "CHECKPOINT")
	want, err := queryRows(c, chain)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 7 {
		t.Errorf("the batch query gave %d rows, want 7: %v", len(want), want)
	}
	lookupWant(t, c, "SELECT * FROM chain", want...)

	plan, err := queryRows(c, `EXPLAIN SELECT o.id, d.name FROM orders o
		   LEFT JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() d ON o.k = d.k`)
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "LookupJoin Left left=[o.k] right=[d.k]") || !strings.Contains(text, "ChangelogScan dim") {
		t.Errorf("EXPLAIN shows no lookup join:\n%s", text)
	}
}

// TestLookupJoinErrors checks what temporal joins refuse, with SQLSTATEs.
func TestLookupJoinErrors(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	lookupExec(t, c, lookupDDL...)
	lookupExec(t, c,
		"CREATE TABLE dim2 (a BIGINT, b BIGINT, name VARCHAR, PRIMARY KEY (a, b))",
		"CREATE TABLE plain (k BIGINT, name VARCHAR)",
		"CREATE MATERIALIZED VIEW mv AS SELECT k, count(*) AS n FROM orders GROUP BY k",
		"INSERT INTO dim VALUES (1, 'a')",
	)
	const j = " FOR SYSTEM_TIME AS OF PROCTIME() "
	for _, c2 := range []struct{ sql, code string }{
		// The event-time form is not implemented.
		{"SELECT * FROM orders o JOIN dim FOR SYSTEM_TIME AS OF o.id d ON o.k = d.k", "0A000"},
		{"SELECT * FROM orders o RIGHT JOIN dim" + j + "d ON o.k = d.k", "0A000"},
		{"SELECT * FROM orders o FULL JOIN dim" + j + "d ON o.k = d.k", "0A000"},
		{"SELECT * FROM orders o JOIN dim" + j + "USING (k)", "0A000"},
		{"SELECT * FROM orders o, dim" + j + "WHERE o.k = dim.k", "0A000"},
		{"SELECT * FROM orders o JOIN dim" + j + "d ON o.k = d.k OR o.id = 1", "0A000"},
		// The right side: a table with a PRIMARY KEY, looked up by all of it.
		{"SELECT * FROM orders o JOIN plain" + j + "p ON o.k = p.k", "0A000"},
		{"SELECT * FROM orders o JOIN mv" + j + "m ON o.k = m.k", "0A000"},
		{"SELECT * FROM orders o JOIN (SELECT * FROM dim)" + j + "d ON o.k = d.k", "0A000"},
		{"SELECT * FROM orders o JOIN dim" + j + "d ON o.amt = d.name::bigint", "0A000"},
		{"SELECT * FROM orders o JOIN dim2" + j + "d ON o.k = d.a", "0A000"},
		{"SELECT * FROM orders o JOIN dim" + j + "d ON o.k = d.nope", "42703"},
		// A view needs a left side that only inserts rows.
		{"CREATE MATERIALIZED VIEW bad AS SELECT * FROM dim2 x JOIN dim" + j + "d ON x.a = d.k", "0A000"},
		{"CREATE MATERIALIZED VIEW bad AS SELECT * FROM mv JOIN dim" + j + "d ON mv.k = d.k", "0A000"},
	} {
		err := keyedExec(c, c2.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c2.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", c2.sql, err, c2.code)
		}
	}
	// Both key columns equated: accepted; a keyed left side is fine in a
	// batch query.
	lookupExec(t, c, "SELECT * FROM orders o JOIN dim2"+j+"d ON o.k = d.a AND d.b = o.id + 1 AND d.name > 'a'",
		"SELECT * FROM dim2 x JOIN dim"+j+"d ON x.a = d.k")
}

// TestLookupJoinKill9 inserts orders and upserts dimension rows from one
// connection, with CHECKPOINTs among them, and kill -9s the server
// mid-stream three times. After each restart both views hold exactly one
// row per order in the orders table (none lost, none twice), and each
// order's dimension version is one the key had no earlier than when the
// order was inserted, never decreasing along the orders of a key.
func TestLookupJoinKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: kill -9 loop")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	lookupExec(t, c, lookupDDL...)
	lookupExec(t, c,
		"INSERT INTO dim VALUES (1, 'k1v0'), (2, 'k2v0'), (3, 'k3v0')",
		`CREATE MATERIALIZED VIEW v AS SELECT o.id, o.k, d.name FROM orders o
		   JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() d ON o.k = d.k`,
		`CREATE MATERIALIZED VIEW lv AS SELECT o.id, o.k, d.name FROM orders o
		   LEFT JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() d ON o.k = d.k`,
	)
	rng := rand.New(rand.NewPCG(33, 14))
	version := map[int]int{1: 0, 2: 0, 3: 0}
	minVersion := map[int]int{} // order id → the version of its key when it was inserted
	keyOf := map[int]int{}
	id, total := 0, 0
	for round := 0; round < 3; round++ {
		type stmt struct {
			sql       string
			order, k  int
			dimUpdate bool
		}
		var stmts []stmt
		for i := 0; i < 4000; i++ {
			switch r := rng.IntN(20); {
			case r == 0:
				stmts = append(stmts, stmt{sql: "CHECKPOINT"})
			case r < 5:
				k := 1 + rng.IntN(3)
				stmts = append(stmts, stmt{k: k, dimUpdate: true})
			default:
				id++
				k := 1 + rng.IntN(4) // key 4 is never in dim
				stmts = append(stmts, stmt{sql: fmt.Sprintf("INSERT INTO orders VALUES (%d, %d, %d)", id, k, id), order: id, k: k})
			}
		}
		done := make(chan string, 1)
		go func(c *pgx.Conn) {
			for _, s := range stmts {
				sql := s.sql
				if s.dimUpdate {
					sql = fmt.Sprintf("INSERT INTO dim VALUES (%d, 'k%dv%d') ON CONFLICT (k) DO UPDATE SET name = EXCLUDED.name", s.k, s.k, version[s.k]+1)
				}
				if s.order > 0 {
					minVersion[s.order], keyOf[s.order] = version[s.k], s.k
				}
				err := keyedExec(c, sql)
				var pe *pgconn.PgError
				if err != nil && !errors.As(err, &pe) {
					done <- sql // the connection died with the server
					return
				}
				if err != nil {
					done <- "error: " + sql + ": " + err.Error()
					return
				}
				if s.dimUpdate {
					version[s.k]++
				}
			}
			done <- ""
		}(c)
		time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
		srv.Kill9()
		inflight := <-done
		if inflight == "" || strings.HasPrefix(inflight, "error: ") {
			t.Fatalf("round %d: the statements ended before the kill (%q); the kill must land mid-stream", round, inflight)
		}
		srv.Restart(t)
		c = srv.Conn(t)
		// The upsert in flight may have been made durable.
		cur, err := queryRows(c, "SELECT k, name FROM dim")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range cur {
			var k, v int
			if _, err := fmt.Sscanf(line, "'%d' | 'k%dv%d'", &k, &k, &v); err != nil {
				t.Fatalf("dim row %s: %v", line, err)
			}
			version[k] = v
		}
		lookupExec(t, c, "CHECKPOINT")
		orders, err := queryRows(c, "SELECT id FROM orders")
		if err != nil {
			t.Fatal(err)
		}
		for name, q := range map[string]string{"v": "SELECT id FROM v", "lv": "SELECT id FROM lv"} {
			want := orders
			if name == "v" {
				want = nil
				for _, o := range orders {
					if n, _ := strconv.Atoi(strings.Trim(o, "'")); keyOf[n] != 4 {
						want = append(want, o)
					}
				}
			}
			got, err := queryRows(c, q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diffRows(got, want); diff != "" {
				t.Fatalf("round %d (killed during %s): view %s does not hold one row per order:\n%s", round, inflight, name, diff)
			}
		}
		rows, err := queryRows(c, "SELECT id, k, name FROM lv ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		last := map[int]int{}
		for _, line := range rows {
			var oid, k, kk, v int
			if keyOfLine := strings.HasSuffix(line, "NULL"); keyOfLine {
				if _, err := fmt.Sscanf(line, "'%d' | '%d'", &oid, &k); err != nil || k != 4 {
					t.Fatalf("round %d: row %s: an order of key %d found no dimension row", round, line, k)
				}
				continue
			}
			if _, err := fmt.Sscanf(line, "'%d' | '%d' | 'k%dv%d'", &oid, &k, &kk, &v); err != nil || k != kk {
				t.Fatalf("round %d: row %s: %v", round, line, err)
			}
			if v < minVersion[oid] || v > version[k] || v < last[k] {
				t.Fatalf("round %d: order %d of key %d has version %d: want one in [%d, %d], and not below %d (the last order of the key)",
					round, oid, k, v, minVersion[oid], version[k], last[k])
			}
			last[k] = v
		}
		t.Logf("round %d: %d orders, killed during %s", round, len(orders), inflight)
		total = len(orders)
	}
	if total < 50 || version[1]+version[2]+version[3] < 10 {
		t.Errorf("%d orders and %v dimension versions in all: too few to test anything", total, version)
	}
}
