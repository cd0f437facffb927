package sqllogic

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestReturningPG runs INSERT, UPDATE and DELETE with RETURNING on
// streamdb and PostgreSQL 15, over tables with and without a primary key,
// through the simple and the extended protocol (pgx prepares statements
// with parameters, so Describe must report RETURNING's columns): the rows
// returned, their column names and the tables must be the same.
func TestReturningPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, c := range []*pgx.Conn{sdb, pgc} {
		for _, s := range []string{
			"CREATE TABLE rk (k INT PRIMARY KEY, v INT, s TEXT DEFAULT 'dflt')",
			"CREATE TABLE ra (x BIGINT, y TEXT)",
		} {
			if err := keyedExec(c, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	stmts := []string{
		"INSERT INTO rk VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c') RETURNING *",
		"INSERT INTO rk (k, v) VALUES (4, 40) RETURNING k, s, v * 2 AS double_v",
		"INSERT INTO rk VALUES (1, 11, 'x'), (5, 50, 'e') ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v + rk.v RETURNING k, v",
		"INSERT INTO rk VALUES (1, 0, 'n'), (6, 60, 'f') ON CONFLICT DO NOTHING RETURNING k, v, s",
		"UPDATE rk SET v = v + 1 WHERE k > 3 RETURNING k, v, upper(s)",
		"UPDATE rk AS r SET s = 'moved', k = k + 100 WHERE k = 2 RETURNING r.k, r.s",
		"UPDATE rk SET v = 0 WHERE k = 999 RETURNING *",
		"DELETE FROM rk WHERE v > 50 RETURNING k, v",
		"DELETE FROM rk WHERE k = 3 RETURNING 'gone: ' || s AS msg, k",
		"INSERT INTO ra VALUES (1, 'p'), (2, 'q') RETURNING y, x + 1",
		"INSERT INTO ra SELECT x + 10, y || y FROM ra RETURNING *",
		"INSERT INTO ra VALUES (7, NULL) RETURNING x, y IS NULL AS nully",
	}
	for _, q := range stmts {
		if diff := diffWithPG(t, sdb, pgc, q); diff != "" {
			t.Fatalf("%s:\n%s", q, diff)
		}
		for _, tbl := range []string{"rk", "ra"} {
			if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM "+tbl); diff != "" {
				t.Fatalf("after %s, table %s differs:\n%s", q, tbl, diff)
			}
		}
	}

	// Column names and types as PostgreSQL describes them, and parameters
	// in the extended protocol.
	ctx := context.Background()
	for _, q := range []string{
		"INSERT INTO rk VALUES ($1, $2, $3) RETURNING k AS key, v::text, s",
		"UPDATE rk SET v = $2 WHERE k = $1 RETURNING *",
	} {
		var names [2][]string
		var vals [2][][]any
		for i, c := range []*pgx.Conn{sdb, pgc} {
			args := []any{int32(8), int32(80), "h"}
			if q[0] == 'U' {
				args = []any{int32(8), int32(81)}
			}
			rows, err := c.Query(ctx, q, args...)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for _, fd := range rows.FieldDescriptions() {
				names[i] = append(names[i], fd.Name+":"+strconv.FormatUint(uint64(fd.DataTypeOID), 10))
			}
			for rows.Next() {
				v, err := rows.Values()
				if err != nil {
					t.Fatal(err)
				}
				vals[i] = append(vals[i], v)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if got := rows.CommandTag().String(); (q[0] == 'I' && got != "INSERT 0 1") || (q[0] == 'U' && got != "UPDATE 1") {
				t.Errorf("%s: tag %q", q, got)
			}
		}
		if a, b := fmt.Sprint(names[0]), fmt.Sprint(names[1]); a != b {
			t.Errorf("%s: columns %s, PostgreSQL %s", q, a, b)
		}
		if a, b := fmt.Sprint(vals[0]), fmt.Sprint(vals[1]); a != b {
			t.Errorf("%s: rows %s, PostgreSQL %s", q, a, b)
		}
	}

	// Errors as PostgreSQL gives them.
	for _, q := range []string{
		"INSERT INTO rk VALUES (20, 1, 'z') RETURNING nosuch",
		"UPDATE rk SET v = 1 RETURNING count(*)",
		"DELETE FROM rk RETURNING",
	} {
		serr, perr := keyedExec(sdb, q), keyedExec(pgc, q)
		if serr == nil || perr == nil || sqlstate(serr) != sqlstate(perr) {
			t.Errorf("%s:\n  streamdb:   %v\n  PostgreSQL: %v", q, serr, perr)
		}
	}
	if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM rk"); diff != "" {
		t.Fatalf("a failed statement changed rk:\n%s", diff)
	}
}
