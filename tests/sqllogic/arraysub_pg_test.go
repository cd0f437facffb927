package sqllogic

import (
	"testing"
)

// TestArraySubqueryTypesPG: ARRAY(SELECT x ...) of every scalar element
// type that has an array type (uuid, integers, floats, boolean, date,
// timestamp, text), uncorrelated and correlated, with ORDER BY inside, over
// no rows ('{}'), prints PostgreSQL 15's rows. A materialized view refuses
// ARRAY(subquery) with 0A000 (as before).
func TestArraySubqueryTypesPG(t *testing.T) {
	t.Parallel()
	d, _ := startStrictDiff(t,
		"CREATE TABLE asq (id INT, g INT, u UUID, b BOOLEAN, f DOUBLE PRECISION, s SMALLINT, dt DATE, ts TIMESTAMP, t TEXT)",
		"CREATE TABLE asg (g INT, name TEXT)")
	for _, c := range []struct{ db, sys string }{{"sdb", "streamdb"}, {"pg", "PostgreSQL"}} {
		conn := d.sdb
		if c.db == "pg" {
			conn = d.pg
		}
		d.mustExec(conn, c.sys, `INSERT INTO asq VALUES
			(1, 1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', true, 1.5, 3, '2024-01-02', '2024-01-02 03:04:05.5', 'x'),
			(2, 1, '00000000-0000-0000-0000-000000000001', false, -0.25, -7, '1999-12-31', '2000-01-01 00:00:00', 'y z'),
			(3, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
			(4, 2, 'ffffffff-ffff-ffff-ffff-ffffffffffff', true, 1e300, 32767, '0044-03-15', '1970-01-01 00:00:00.000001', '"q"'),
			(5, 3, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', false, 0, 0, '2024-02-29', '2024-02-29 23:59:59', '')`)
		d.mustExec(conn, c.sys, `INSERT INTO asg VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four')`)
	}
	batch := []string{
		"SELECT ARRAY(SELECT u FROM asq ORDER BY id)",
		"SELECT ARRAY(SELECT id FROM asq ORDER BY id DESC)",
		"SELECT ARRAY(SELECT b FROM asq ORDER BY id), ARRAY(SELECT f FROM asq ORDER BY id), ARRAY(SELECT s FROM asq ORDER BY id)",
		"SELECT ARRAY(SELECT dt FROM asq ORDER BY id), ARRAY(SELECT ts FROM asq ORDER BY id), ARRAY(SELECT t FROM asq ORDER BY id)",
		"SELECT ARRAY(SELECT id::bigint FROM asq WHERE id > 100)",
		"SELECT ARRAY(SELECT u FROM asq WHERE id > 100)",
		"SELECT g, ARRAY(SELECT u FROM asq WHERE asq.g = asg.g ORDER BY id) FROM asg",
		"SELECT g, ARRAY(SELECT f FROM asq WHERE asq.g = asg.g ORDER BY id) FROM asg",
		"SELECT g, ARRAY(SELECT dt FROM asq WHERE asq.g = asg.g AND asq.id > asg.g ORDER BY id) FROM asg",
		"SELECT g, cardinality(ARRAY(SELECT u FROM asq WHERE asq.g = asg.g)) FROM asg",
		"SELECT g FROM asg WHERE 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid = ANY(ARRAY(SELECT u FROM asq WHERE asq.g = asg.g))",
		"SELECT (ARRAY(SELECT u FROM asq ORDER BY id))[2], (ARRAY(SELECT ts FROM asq ORDER BY id))[1:2]",
	}
	for _, c := range d.viewAndBatchCases("asq", "array-subquery", nil, batch) {
		d.checkNorm(c, 0, func(s string) string { return s })
	}
	for _, q := range []string{
		"SELECT ARRAY(SELECT ARRAY[id] FROM asq)",
	} {
		if got := sqlState(t, d.sdb, q); got != "0A000" {
			t.Errorf("%s: SQLSTATE %q, want 0A000", q, got)
		}
	}
	if got := sqlState(t, d.sdb, "CREATE MATERIALIZED VIEW asqv AS SELECT g, ARRAY(SELECT u FROM asq WHERE asq.g = asg.g) AS a FROM asg"); got != "0A000" {
		t.Errorf("view with ARRAY(subquery): SQLSTATE %q, want 0A000", got)
	}
}
