package sqllogic

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMemoryLimitWithinEpoch: state.memory_limit is checked after every
// input batch, not only at barriers, so one large COPY (one statement, a
// few epochs' worth of new groups) fails the job with 53200 close to the
// limit rather than at whatever size the epoch reached.
func TestMemoryLimitWithinEpoch(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	const limit = 4 << 20
	execAll(t, c, "SET restart.strategy = 'none'", "SET checkpoint.interval = 'off'", "CREATE TABLE t (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW big WITH (state.backend = 'memory', state.memory_limit = '4MB') AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k")
	const rows = 1_000_000 // distinct keys: about 100 MB of state unbounded
	var b strings.Builder
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&b, "%d\t%d\n", i, i)
	}
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY t FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	r := waitState(t, c, "big", "FAILED", 2*time.Minute)
	m := regexp.MustCompile(`state of (\d+)(B|kB|MB|GB)`).FindStringSubmatch(r.lastErr)
	if m == nil || !strings.Contains(r.lastErr, "53200") {
		t.Fatalf("last_error %q does not give 53200 and the state's size", r.lastErr)
	}
	used, _ := strconv.ParseInt(m[1], 10, 64)
	used <<= map[string]int{"B": 0, "kB": 10, "MB": 20, "GB": 30}[m[2]]
	t.Logf("the job failed with %.1f MB of state against a 4 MB limit", float64(used)/(1<<20))
	if used > 8*limit {
		t.Errorf("the job failed only at %d bytes of state, limit %d: not checked within the epoch", used, limit)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != rows {
		t.Errorf("the server after the refusal: count %d (%v)", n, err)
	}
}
