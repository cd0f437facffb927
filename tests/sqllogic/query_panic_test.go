package sqllogic

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A panic while a batch query runs (on the query's own goroutine, not the
// connection's) fails that statement with XX000; the session and the server
// go on, and nothing committed is lost.
func TestQueryPanicIsAnError(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, bin, []string{"STREAMDB_FAILPOINTS=query:run:1:panic"}, "")
	ctx := context.Background()
	conn := srv.Conn(t)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (a BIGINT)"); err != nil {
		t.Fatal(err)
	}
	// COPY, not INSERT: INSERT ... VALUES runs a query too, and would take
	// the one armed panic.
	if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader("1\n2\n"), "COPY t FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	var n int64
	err = conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "XX000" {
		t.Fatalf("a panicking query: got %v, want XX000", err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("after the panic, same session: n=%d err=%v", n, err)
	}
	other := srv.Conn(t)
	if err := other.QueryRow(ctx, "SELECT sum(a) FROM t").Scan(&n); err != nil || n != 3 {
		t.Fatalf("after the panic, new session: sum=%d err=%v", n, err)
	}
}
