package sqllogic

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestFromSubqueryWithoutAlias checks a subquery in FROM without an alias
// as PostgreSQL 16 has it (PostgreSQL 15, the differential oracle,
// refuses it with 42601, so the expected answers are written out): the
// subquery is unnamed, its columns are referenced unqualified, in joins,
// plain views and materialized views; two unnamed subqueries with a
// column of one name make it ambiguous (42702), and no name qualifies it
// (42P01).
func TestFromSubqueryWithoutAlias(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE t (k INT, v INT)",
		"INSERT INTO t VALUES (1, 10), (2, 20), (1, 5)",
		"CREATE VIEW pv AS SELECT * FROM (SELECT k, sum(v) AS s FROM t GROUP BY k) WHERE s > 6",
		"CREATE MATERIALIZED VIEW mv AS SELECT k, s, n FROM (SELECT k, sum(v) AS s FROM t GROUP BY k) JOIN (SELECT k AS k2, count(*) AS n FROM t GROUP BY k) ON k = k2",
		"CHECKPOINT",
	)
	for _, c2 := range []struct{ q, want string }{
		{"SELECT * FROM (SELECT 1 AS a)", "1"},
		{"SELECT a FROM (SELECT 1 AS a) WHERE a = 1", "1"},
		{"SELECT a, b FROM (SELECT 1 AS a), (SELECT 2 AS b)", "1 2"},
		{"SELECT * FROM (SELECT 1 AS a) JOIN (SELECT 1 AS b) ON a = b", "1 1"},
		{"SELECT * FROM (SELECT * FROM (SELECT 3 AS z))", "3"},
		{"SELECT column1 FROM (VALUES (1), (2)) ORDER BY 1", "1|2"},
		{"SELECT k, v, m FROM t, (SELECT max(v) AS m FROM t) WHERE v = m", "2 20 20"},
		{"SELECT k FROM (SELECT k FROM t) LEFT JOIN (SELECT k FROM t WHERE v > 6) USING (k) ORDER BY 1", "1|1|2"},
		{"SELECT * FROM pv ORDER BY k", "1 15|2 20"},
		{"SELECT * FROM mv ORDER BY k", "1 15 2|2 20 1"},
	} {
		rows, err := queryRows(c, c2.q)
		if err != nil {
			t.Errorf("%s: %v", c2.q, err)
			continue
		}
		var want []string // rows split by |, values by spaces
		for _, r := range strings.Split(c2.want, "|") {
			want = append(want, "'"+strings.Join(strings.Fields(r), "' | '")+"'")
		}
		if got := strings.Join(rows, "\n"); got != strings.Join(want, "\n") {
			t.Errorf("%s: got %q, want %q", c2.q, got, c2.want)
		}
	}
	for _, c2 := range []struct{ q, code string }{
		{"SELECT a FROM (SELECT 1 AS a), (SELECT 2 AS a)", "42702"},
		{"SELECT x.a FROM (SELECT 1 AS a)", "42P01"},
	} {
		_, err := queryRows(c, c2.q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c2.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", c2.q, err, c2.code)
		}
	}
}
