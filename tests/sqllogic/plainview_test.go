package sqllogic

import (
	"context"
	"strings"
	"testing"
)

// TestPlainViews: CREATE VIEW stores a query that reads expand; views over
// views, column lists, a materialized view over a view; DROP of a relation
// a view reads is refused with 2BP01 (CASCADE drops the views); the views
// survive a restart.
func TestPlainViews(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	execAll(t, c, "SET checkpoint.interval = '100ms'",
		"CREATE TABLE t (x BIGINT, s TEXT)",
		"INSERT INTO t VALUES (1, 'a'), (42, 'b'), (43, 'c')",
		"CREATE VIEW big AS SELECT x, x * 2 AS y FROM t WHERE x > 40",
		"CREATE VIEW big2 (z) AS SELECT x FROM big WHERE y > 85")
	if got := int64s(t, c, "SELECT y FROM big ORDER BY x"); !sameInts(got, []int64{84, 86}) {
		t.Errorf("SELECT y FROM big: %v", got)
	}
	if got := int64s(t, c, "SELECT b.z FROM big2 AS b"); !sameInts(got, []int64{43}) {
		t.Errorf("SELECT z FROM big2: %v", got)
	}
	// A view is its query over the data of the moment.
	execAll(t, c, "INSERT INTO t VALUES (50, 'd')")
	if got := int64s(t, c, "SELECT z FROM big2 ORDER BY z"); !sameInts(got, []int64{43, 50}) {
		t.Errorf("big2 after an insert: %v", got)
	}
	execAll(t, c, "CREATE MATERIALIZED VIEW mv AS SELECT count(*) AS n FROM big")

	_, err := c.Exec(ctx, "DROP TABLE t")
	wantCode(t, "DROP TABLE under views", err, "2BP01")
	_, err = c.Exec(ctx, "DROP VIEW big")
	pe := wantCode(t, "DROP VIEW under a view", err, "2BP01")
	if !strings.Contains(pe.Detail, "depends on big") {
		t.Errorf("detail %q", pe.Detail)
	}
	_, err = c.Exec(ctx, "DROP VIEW t")
	wantCode(t, "DROP VIEW of a table", err, "42809")
	_, err = c.Exec(ctx, "DROP VIEW nosuch")
	wantCode(t, "DROP VIEW of nothing", err, "42P01")
	_, err = c.Exec(ctx, "CREATE VIEW big AS SELECT 1")
	wantCode(t, "CREATE VIEW of an existing name", err, "42P07")
	_, err = c.Exec(ctx, "CREATE OR REPLACE VIEW big AS SELECT s FROM t")
	wantCode(t, "CREATE OR REPLACE VIEW changing a column", err, "42P16")
	execAll(t, c, "CREATE OR REPLACE VIEW big AS SELECT x, x * 2 AS y, s FROM t WHERE x > 40")
	_, err = c.Exec(ctx, "INSERT INTO big VALUES (1, 2, 'x')")
	if err == nil {
		t.Error("INSERT into a view succeeded")
	}

	srv.Restart(t)
	c = srv.Conn(t)
	if got := int64s(t, c, "SELECT z FROM big2 ORDER BY z"); !sameInts(got, []int64{43, 50}) {
		t.Errorf("big2 after restart: %v", got)
	}
	execAll(t, c, "DROP MATERIALIZED VIEW mv", "DROP VIEW big2, big")
	_, err = c.Exec(ctx, "SELECT * FROM big")
	wantCode(t, "SELECT from a dropped view", err, "42P01")
	execAll(t, c, "CREATE VIEW v1 AS SELECT x FROM t", "DROP TABLE t CASCADE")
	_, err = c.Exec(ctx, "SELECT * FROM v1")
	wantCode(t, "a view dropped by CASCADE", err, "42P01")
}
