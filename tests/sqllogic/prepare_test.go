package sqllogic

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func int64s(t *testing.T, c *pgx.Conn, query string, args ...any) []int64 {
	t.Helper()
	rows, err := c.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", query, args, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatalf("%s %v: %v", query, args, err)
	}
	return out
}

func sameInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLimitParams: LIMIT $1 OFFSET $2 through pgx's extended protocol,
// with the parameters' type described as bigint, NULL as no limit, and
// negative values refused with PostgreSQL's codes.
func TestLimitParams(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (x BIGINT)", "INSERT INTO t VALUES (1), (2), (3), (4), (5), (6)")
	q := "SELECT x FROM t ORDER BY x LIMIT $1 OFFSET $2"
	if got := int64s(t, c, q, 2, 3); !sameInts(got, []int64{4, 5}) {
		t.Errorf("LIMIT 2 OFFSET 3: %v", got)
	}
	if got := int64s(t, c, q, 10, 0); len(got) != 6 {
		t.Errorf("LIMIT 10 OFFSET 0: %v", got)
	}
	if got := int64s(t, c, q, nil, 4); !sameInts(got, []int64{5, 6}) {
		t.Errorf("LIMIT NULL OFFSET 4: %v", got)
	}
	if got := int64s(t, c, "SELECT x FROM t WHERE x > $1 ORDER BY x DESC OFFSET $3 LIMIT $2", 1, 2, 1); !sameInts(got, []int64{5, 4}) {
		t.Errorf("WHERE x > 1 OFFSET 1 LIMIT 2: %v", got)
	}
	sd, err := c.Prepare(ctx, "lim", q)
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.ParamOIDs) != 2 || sd.ParamOIDs[0] != 20 || sd.ParamOIDs[1] != 20 {
		t.Errorf("parameter types %v, want bigint, bigint", sd.ParamOIDs)
	}
	_, err = c.Exec(ctx, q, -1, 0)
	wantCode(t, "LIMIT -1", err, "2201W")
	_, err = c.Exec(ctx, q, 1, -1)
	wantCode(t, "OFFSET -1", err, "2201X")
	// Without a value for $1 (the simple protocol) the statement is refused.
	_, err = c.Exec(ctx, "SELECT x FROM t LIMIT $1", pgx.QueryExecModeSimpleProtocol)
	wantCode(t, "LIMIT $1 with no parameters", err, "42P02")
}
