package crash

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/streamdb/streamdb/tests/sqllogic"
)

// TestRecoveryTime measures how long a view takes to serve reads again
// after kill -9 (docs/BENCHMARKS.md): COPY STREAMDB_RECOVERY_ROWS rows
// (default: as many as keys) over STREAMDB_RECOVERY_KEYS keys (default
// 100K, the size CI runs) into a stream with a GROUP BY view, CHECKPOINT,
// kill -9, restart, and poll the view until a read answers. It logs the
// time and checks the view is exact after the restart: its groups, counts
// and sums equal the batch query over the stream and the rows the
// generator wrote. The measurement of docs/BENCHMARKS.md is the big size:
//
//	STREAMDB_RECOVERY_KEYS=1048576 STREAMDB_RECOVERY_ROWS=5000000 go test ./tests/crash -run RecoveryTime -v
func TestRecoveryTime(t *testing.T) {
	keys := 100_000
	if n, err := strconv.Atoi(os.Getenv("STREAMDB_RECOVERY_KEYS")); err == nil && n > 0 {
		keys = n
	}
	rows := keys
	if n, err := strconv.Atoi(os.Getenv("STREAMDB_RECOVERY_ROWS")); err == nil && n > 0 {
		rows = n
	}
	srv := sqllogic.StartServer(t, "")
	conn := srv.Conn(t)
	exec(t, conn, "CREATE TABLE t (k BIGINT, v BIGINT)")
	exec(t, conn, "CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k")
	start := time.Now()
	if _, err := conn.PgConn().CopyFrom(context.Background(), &seqReader{keys: keys, end: rows}, "COPY t FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	exec(t, conn, "CHECKPOINT")
	t.Logf("%d rows over %d keys copied and checkpointed in %v", rows, keys, time.Since(start).Round(time.Millisecond))

	killed := time.Now()
	srv.Kill9()
	srv.Restart(t)
	conn = srv.Conn(t)
	listening := time.Since(killed)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
		_, err := conn.Exec(ctx, "SELECT * FROM v LIMIT 1")
		cancel()
		if err == nil {
			break
		}
		if time.Since(killed) > catchUpTimeout {
			t.Fatalf("the view does not answer %v after kill -9: %v", catchUpTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("kill -9 to serving: %v (accepting connections after %v)", time.Since(killed).Round(time.Millisecond), listening.Round(time.Millisecond))

	var groups, count, sum int64
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(c), sum(s) FROM v").Scan(&groups, &count, &sum); err != nil {
		t.Fatal(err)
	}
	if groups != int64(min(keys, rows)) || count != int64(rows) || sum != int64(rows) {
		t.Fatalf("after the restart the view has %d groups counting %d rows summing to %d, want %d counting %d summing to %d",
			groups, count, sum, min(keys, rows), rows, rows)
	}
	// Per group, against the batch query over the stream.
	var diff int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM v FULL JOIN (SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k) b
	    ON v.k = b.k AND v.c = b.c AND v.s = b.s WHERE v.k IS NULL OR b.k IS NULL`).Scan(&diff); err != nil {
		t.Fatal(err)
	}
	if diff != 0 {
		t.Fatalf("after the restart %d groups of the view differ from the batch query", diff)
	}
}

// seqReader produces rows [0, end) in COPY text format: row i is
// (i mod keys, 1).
type seqReader struct {
	keys, next, end int
	buf, unread     []byte
}

func (r *seqReader) Read(p []byte) (int, error) {
	if len(r.unread) == 0 {
		if r.next == r.end {
			return 0, io.EOF
		}
		r.buf = r.buf[:0]
		for stop := min(r.end, r.next+4096); r.next < stop; r.next++ {
			r.buf = fmt.Appendf(r.buf, "%d\t1\n", r.next%r.keys)
		}
		r.unread = r.buf
	}
	n := copy(p, r.unread)
	r.unread = r.unread[n:]
	return n, nil
}
