package sqllogic

import (
	"context"
	"testing"
)

// TestCompositeIntervalKeysPG: a record whose interval field differs only in
// how the span is written ('24:00:00' and '1 day', '1 mon' and '30 days')
// is one key for GROUP BY, DISTINCT and a join, as PostgreSQL's record =
// says, in batch queries and in a materialized view (issue 33, item 1).
func TestCompositeIntervalKeysPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pdb := srv.Conn(t), pg.Conn(t)
	ctx := context.Background()
	both := func(stmts ...string) {
		t.Helper()
		execAll(t, sdb, stmts...)
		execAll(t, pdb, stmts...)
	}
	both("CREATE TYPE span AS (d INTERVAL, n INT)",
		"CREATE TABLE ci (id INT, r span)")
	execAll(t, sdb, "CREATE MATERIALIZED VIEW civ AS SELECT r, count(*) AS n FROM ci GROUP BY r",
		"CREATE MATERIALIZED VIEW cid AS SELECT count(DISTINCT r) AS n FROM ci")
	both("INSERT INTO ci VALUES (1, ROW('24:00:00', 1)::span), (2, ROW('1 day', 1)::span), (3, ROW('1 mon', 2)::span), " +
		"(4, ROW('30 days', 2)::span), (5, ROW('720:00:00', 2)::span), (6, ROW('1 day', 2)::span), (7, ROW(NULL, 1)::span), (8, ROW(NULL, 1)::span)")
	execAll(t, sdb, "CHECKPOINT")

	queries := []string{
		"SELECT count(*)::text FROM (SELECT DISTINCT r FROM ci) s",
		"SELECT count(*)::text || ' ' || sum(n)::text FROM (SELECT r, count(*) AS n FROM ci GROUP BY r) s",
		"SELECT count(*)::text FROM ci x JOIN ci y ON x.r = y.r",
		"SELECT count(DISTINCT r)::text FROM ci",
	}
	for _, q := range queries {
		var got, want string
		if err := sdb.QueryRow(ctx, q).Scan(&got); err != nil {
			t.Fatalf("streamdb: %s: %v", q, err)
		}
		if err := pdb.QueryRow(ctx, q).Scan(&want); err != nil {
			t.Fatalf("PostgreSQL: %s: %v", q, err)
		}
		if got != want {
			t.Errorf("%s: streamdb %s, PostgreSQL %s", q, got, want)
		}
	}
	// The view holds one row per equality class, with the class's count.
	var got, want string
	if err := sdb.QueryRow(ctx, "SELECT count(*)::text || ' ' || sum(n)::text FROM civ").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if err := pdb.QueryRow(ctx, "SELECT count(*)::text || ' ' || sum(n)::text FROM (SELECT r, count(*) AS n FROM ci GROUP BY r) s").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("view: streamdb %s, PostgreSQL %s", got, want)
	}
	if err := sdb.QueryRow(ctx, "SELECT n::text FROM cid").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if err := pdb.QueryRow(ctx, "SELECT count(DISTINCT r)::text FROM ci").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("count(DISTINCT r) view: streamdb %s, PostgreSQL %s", got, want)
	}
}
