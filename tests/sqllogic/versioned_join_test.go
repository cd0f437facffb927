package sqllogic

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// versionedDDL is a stream of orders and a versioned table of rates (a
// PRIMARY KEY and a WATERMARK on its version time), both with event time.
var versionedDDL = []string{
	"CREATE TABLE orders (id BIGINT, cur VARCHAR, amt BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
	"CREATE TABLE rates (cur VARCHAR PRIMARY KEY, rate BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
}

const versionedInner = `SELECT o.id, o.cur, o.amt * r.rate AS conv, r.ts AS rts FROM orders o
	JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur`

const versionedLeft = `SELECT o.id, r.rate, r.ts AS rts FROM orders o
	LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON r.cur = o.cur`

// TestVersionedJoin: a view joining orders with the rate versions as of
// each order's time; rows come once the watermark of both inputs passed
// the order's time, and are final; a version that comes out of order
// within the watermark delay is still chosen. The LEFT form pads an order
// without a version; the batch query equals the view once the watermark
// passed every order.
func TestVersionedJoin(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	lookupExec(t, c, versionedDDL...)
	lookupExec(t, c,
		"CREATE MATERIALIZED VIEW v AS "+versionedInner,
		"CREATE MATERIALIZED VIEW lv AS "+versionedLeft,
		"INSERT INTO rates VALUES ('EUR', 10, '2026-01-01 00:00:00'), ('USD', 1, '2026-01-01 00:00:00')",
		"INSERT INTO orders VALUES (1, 'EUR', 2, '2026-01-01 00:00:10'), (2, 'USD', 3, '2026-01-01 00:00:12'), (3, 'GBP', 4, '2026-01-01 00:00:13')",
		// The same order twice: twice in the views.
		"INSERT INTO orders VALUES (2, 'USD', 3, '2026-01-01 00:00:12')",
		"UPDATE rates SET rate = 11, ts = '2026-01-01 00:00:20' WHERE cur = 'EUR'",
		// Out of order, within the 5 s delay: order 4 at :18 comes before
		// the EUR version at :16 that it must see.
		"INSERT INTO orders VALUES (4, 'EUR', 5, '2026-01-01 00:00:18')",
		"CHECKPOINT",
	)
	// Watermarks: orders :13 (max :18 - 5), rates :15 (:20 - 5): orders
	// before :13 are out.
	lookupWant(t, c, "SELECT * FROM v", "'1' | 'EUR' | '20' | '2026-01-01 00:00:00'", "'2' | 'USD' | '3' | '2026-01-01 00:00:00'", "'2' | 'USD' | '3' | '2026-01-01 00:00:00'")
	lookupExec(t, c,
		"INSERT INTO rates VALUES ('GBP', 7, '2026-01-01 00:00:01')",
		"UPDATE rates SET rate = 12, ts = '2026-01-01 00:00:16' WHERE cur = 'EUR'",
		"INSERT INTO orders VALUES (5, 'EUR', 1, '2026-01-01 00:00:40'), (6, 'JPY', 1, '2026-01-01 00:00:41')",
		"INSERT INTO rates VALUES ('JPY', 100, '2026-01-01 00:00:50')",
		"CHECKPOINT",
	)
	lookupWant(t, c, "SELECT * FROM v",
		"'1' | 'EUR' | '20' | '2026-01-01 00:00:00'", "'2' | 'USD' | '3' | '2026-01-01 00:00:00'", "'2' | 'USD' | '3' | '2026-01-01 00:00:00'",
		"'3' | 'GBP' | '28' | '2026-01-01 00:00:01'", "'4' | 'EUR' | '60' | '2026-01-01 00:00:16'")
	lookupWant(t, c, "SELECT * FROM lv",
		"'1' | '10' | '2026-01-01 00:00:00'", "'2' | '1' | '2026-01-01 00:00:00'", "'2' | '1' | '2026-01-01 00:00:00'",
		"'3' | '7' | '2026-01-01 00:00:01'", "'4' | '12' | '2026-01-01 00:00:16'")
	// Push both watermarks past every order.
	lookupExec(t, c,
		"INSERT INTO orders VALUES (7, 'XXX', 0, '2026-01-01 00:01:00')",
		"INSERT INTO rates VALUES ('XXX', 0, '2026-01-01 00:01:00')",
		"INSERT INTO orders VALUES (8, 'ZZZ', 0, '2026-01-01 00:02:00')",
		"INSERT INTO rates VALUES ('ZZZ', 0, '2026-01-01 00:02:00')",
		"CHECKPOINT",
	)
	for _, q := range []struct{ view, batch string }{{"v", versionedInner}, {"lv", versionedLeft}} {
		got, err := queryRows(c, "SELECT * FROM "+q.view)
		if err != nil {
			t.Fatal(err)
		}
		want, err := queryRows(c, q.batch+" WHERE o.id < 8")
		if err != nil {
			t.Fatal(err)
		}
		if diff := diffRows(got, want); diff != "" {
			t.Errorf("view %s differs from its batch query:\n%s", q.view, diff)
		}
	}
	lookupWant(t, c, "SELECT * FROM lv WHERE id >= 5",
		"'5' | '11' | '2026-01-01 00:00:20'", "'6' | NULL | NULL", "'7' | '0' | '2026-01-01 00:01:00'")
}

// TestVersionedJoinErrors checks what versioned joins refuse.
func TestVersionedJoinErrors(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	lookupExec(t, c, versionedDDL...)
	lookupExec(t, c,
		"CREATE TABLE nokey (cur VARCHAR, rate BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
		"CREATE TABLE nowm (cur VARCHAR PRIMARY KEY, rate BIGINT, ts TIMESTAMP)",
		"CREATE TABLE plain (id BIGINT, cur VARCHAR, ts TIMESTAMP)",
		"CREATE TABLE keyedorders (id BIGINT PRIMARY KEY, cur VARCHAR, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
	)
	for _, q := range []struct{ sql, code string }{
		{"SELECT * FROM orders o JOIN nokey FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur", "0A000"},
		{"SELECT * FROM orders o JOIN nowm FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur", "0A000"},
		{"SELECT * FROM plain o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur", "0A000"},
		{"SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur AND o.amt > r.rate", "0A000"},
		{"SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur <> r.cur", "0A000"},
		{"SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.amt = r.rate", "0A000"},
		{"SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur OR o.id = 1", "0A000"},
		{"SELECT * FROM orders o RIGHT JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur", "0A000"},
		{"SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts + INTERVAL '1' SECOND r ON o.cur = r.cur", "0A000"},
		{"SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.amt r ON o.cur = r.cur", "42804"},
		{"SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF r.ts r ON o.cur = r.cur", "0A000"},
		{"SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.nope r ON o.cur = r.cur", "42703"},
		{"SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r USING (cur)", "0A000"},
		{"CREATE MATERIALIZED VIEW bad AS SELECT * FROM keyedorders o JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.cur = r.cur", "0A000"},
	} {
		err := keyedExec(c, q.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != q.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", q.sql, err, q.code)
		}
	}
	plan, err := queryRows(c, "EXPLAIN "+versionedLeft)
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "VersionedJoin Left") {
		t.Errorf("EXPLAIN lacks the versioned join:\n%s", text)
	}
}
