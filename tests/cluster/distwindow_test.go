package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestClusterDistributedWindow: windowed GROUP BY views run distributed
// on three nodes (shared stream log, --cluster-storage), and the
// watermark crosses the exchange: each aggregate instance's watermark is
// the minimum over every split (partition) of the source, on whichever
// node it is read, so a window closes only once every split has passed
// it. Four views over a table of three partitions with a watermark of
// one second, each created WITH (distributed = true) (refused if it could
// not run distributed): a TUMBLE, a HOP and a CUMULATE with EMIT ON
// WINDOW CLOSE, and a TUMBLE in the GROUP BY form that updates its rows. Every INSERT goes
// to one partition, round robin per node, so three INSERTs from one node
// reach the three splits.
//
//   - After six one-second rounds written to every split, the EMIT ON
//     WINDOW CLOSE view holds exactly the windows every split has passed
//     (the batch query over rounds 0-3); rows far ahead in two of the
//     three splits close nothing more (the third split holds the
//     watermark back); in the third too, every data window closes and
//     each view equals its batch query.
//   - A late row (a window closed long ago) is dropped by every view; n2
//     is killed with kill -9 after a checkpoint and the survivors insert
//     more rounds and a flush: the survivors, and n2 restarted, read each
//     view as its batch query without the late row. The survivors restore
//     the aggregate's watermark with its state, so the late row, replayed
//     from the checkpoint's positions, is judged late again and no closed
//     window is emitted twice.
//   - A SESSION window asked to run distributed is refused with 0A000 and
//     a reason that names what does.
func TestClusterDistributedWindow(t *testing.T) {
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "distwindow", 3, clusterConf{extra: []string{"--cluster-kafka", kafkaAddr}})
	execAll(t, c.conns[0],
		"CREATE TABLE ev (k BIGINT, x BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (partitions = 3)",
		`CREATE MATERIALIZED VIEW w WITH (distributed = true) AS
		   SELECT window_start, window_end, k, count(*) AS n, sum(x) AS s
		   FROM TUMBLE(ev, ts, INTERVAL '1' SECOND) GROUP BY window_start, window_end, k EMIT ON WINDOW CLOSE`,
		`CREATE MATERIALIZED VIEW h WITH (distributed = true) AS
		   SELECT window_start, window_end, count(*) AS n, sum(x) AS s, max(k) AS mk
		   FROM HOP(ev, ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE`,
		`CREATE MATERIALIZED VIEW cu WITH (distributed = true) AS
		   SELECT window_start, window_end, count(*) AS n, sum(x) AS s
		   FROM CUMULATE(ev, ts, INTERVAL '1' SECOND, INTERVAL '3' SECOND) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE`,
		`CREATE MATERIALIZED VIEW g WITH (distributed = true) AS
		   SELECT k, TUMBLE_START(ts, INTERVAL '2' SECOND) AS ws, count(*) AS n, max(x) AS m
		   FROM ev GROUP BY k, TUMBLE(ts, INTERVAL '2' SECOND)`)
	_, err := c.conns[1].Exec(t.Context(), `CREATE MATERIALIZED VIEW sess WITH (distributed = true) AS
		SELECT k, SESSION_START(ts, INTERVAL '1' SECOND) AS ss, count(*) AS n FROM ev GROUP BY k, SESSION(ts, INTERVAL '1' SECOND)`)
	if sqlstate(err) != "0A000" || !strings.Contains(err.Error(), "GROUP BY over one source, windowed or not") {
		t.Fatalf("a distributed SESSION window: %v, want 0A000 naming what runs distributed", err)
	}

	base := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return base.Add(d).Format("2006-01-02 15:04:05.000") }
	insert := func(conn *pgx.Conn, rows ...string) {
		t.Helper()
		execAll(t, conn, "INSERT INTO ev VALUES "+strings.Join(rows, ", "))
	}
	// round writes round r (event times in [r s, r+1 s)) from node i: three
	// INSERTs of four rows, one to each split.
	round := func(i int, r int) {
		t.Helper()
		for s := 0; s < 3; s++ {
			var rows []string
			for j := 0; j < 4; j++ {
				n := r*12 + s*4 + j
				rows = append(rows, fmt.Sprintf("(%d, %d, '%s')", n%5, n%7-2, at(time.Duration(r)*time.Second+time.Duration(n%12)*80*time.Millisecond)))
			}
			insert(c.conns[i], rows...)
		}
	}
	flush := func(i, splits int, ts time.Duration) {
		t.Helper()
		for s := 0; s < splits; s++ {
			insert(c.conns[i], fmt.Sprintf("(1, 100, '%s')", at(ts)))
		}
	}
	// The batch query of each view; before(ts) keeps the rows before ts
	// (the windows a watermark past them has closed). The late row has
	// k = -1.
	wBatch := func(before string) string {
		return `SELECT window_start, window_end, k, count(*), sum(x) FROM TUMBLE(ev, ts, INTERVAL '1' SECOND)
		  WHERE k >= 0 AND ts < '` + before + `' GROUP BY window_start, window_end, k`
	}
	hBatch := func(before string) string {
		return `SELECT window_start, window_end, count(*), sum(x), max(k) FROM HOP(ev, ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND)
		  WHERE k >= 0 AND ts < '` + before + `' GROUP BY window_start, window_end`
	}
	cuBatch := func(before string) string {
		return `SELECT window_start, window_end, count(*), sum(x) FROM CUMULATE(ev, ts, INTERVAL '1' SECOND, INTERVAL '3' SECOND)
		  WHERE k >= 0 AND ts < '` + before + `' GROUP BY window_start, window_end`
	}
	const cuView = "SELECT window_start, window_end, n, s FROM cu"
	const gView, gBatch = "SELECT k, ws, n, m FROM g",
		"SELECT k, TUMBLE_START(ts, INTERVAL '2' SECOND), count(*), max(x) FROM ev WHERE k >= 0 GROUP BY k, TUMBLE(ts, INTERVAL '2' SECOND)"
	const wView, hView = "SELECT window_start, window_end, k, n, s FROM w", "SELECT window_start, window_end, n, s, mk FROM h"
	batch := func(i int, q string) []string {
		t.Helper()
		rows, err := queryRows(c.conns[i], q)
		if err != nil {
			t.Fatalf("%s on %s: %v", q, c.nodes[i].id, err)
		}
		slices.Sort(rows)
		return rows
	}
	// exact waits until view read on node i equals the batch query.
	exact := func(what string, i int, view, q string) {
		t.Helper()
		var got, want []string
		start := time.Now()
		waitUntil(t, 60*time.Second, what+": "+view+" on "+c.nodes[i].id, func() bool {
			want = batch(i, q)
			var ok bool
			got, ok = c.distRows(t, i, view)
			return ok && len(want) > 0 && slices.Equal(got, want)
		})
		t.Logf("%s: %s exact on %s (%d rows) after %v", what, view, c.nodes[i].id, len(want), time.Since(start).Round(time.Millisecond))
	}
	all := func(what string, flushedAt time.Duration, nodes ...int) {
		t.Helper()
		for _, i := range nodes {
			exact(what, i, wView, wBatch(at(flushedAt)))
			exact(what, i, hView, hBatch(at(flushedAt)))
			exact(what, i, cuView, cuBatch(at(flushedAt)))
			exact(what, i, gView, gBatch)
		}
	}

	for r := 0; r < 6; r++ {
		round(r%3, r)
	}
	// Every split is in round 5: its watermark is in [4 s, 5 s), so the
	// windows of rounds 0-3 are closed, those of rounds 4 and 5 open.
	exact("six rounds", 0, wView, wBatch(at(4*time.Second)))
	// Two splits far ahead: the third still holds every instance's
	// watermark back. g, a job over the same splits, shows the two rows
	// once an epoch has read them; a few more rounds go by.
	flush(0, 2, 100*time.Second)
	exact("two splits flushed", 1, gView, gBatch)
	time.Sleep(3 * time.Second)
	for i := range c.conns {
		if got, want := batch(i, wView), batch(i, wBatch(at(4*time.Second))); !slices.Equal(got, want) {
			t.Fatalf("two of three splits past 100 s: w on %s has %d rows, want the %d of rounds 0-3 (a window closed before every split passed it):\n%v\nwant\n%v",
				c.nodes[i].id, len(got), len(want), got, want)
		}
	}
	// The third split too: every data window closes.
	flush(0, 1, 100*time.Second)
	all("three splits flushed", 100*time.Second, 0, 1, 2)

	// A checkpoint of w holds every row so far.
	pfx := "/streamdb/" + c.name + "/dataflow/w/"
	var committed struct{ Epoch uint64 }
	etcdJSON(t, c, pfx+"epoch", &committed)
	var ck struct{ Epoch uint64 }
	waitUntil(t, 30*time.Second, "a checkpoint of w at or after the epoch that holds every row", func() bool {
		return etcdJSON(t, c, pfx+"checkpoint", &ck) && ck.Epoch >= committed.Epoch
	})
	t.Logf("w: committed epoch %d, checkpoint %d", committed.Epoch, ck.Epoch)

	// A late row, then kill -9 of n2; the survivors write on.
	insert(c.conns[2], fmt.Sprintf("(-1, 1000, '%s')", at(500*time.Millisecond)))
	c.nodes[1].srv.Kill9()
	for r := 110; r < 113; r++ {
		round([]int{0, 2}[r%2], r)
	}
	flush(2, 3, 200*time.Second)
	all("after kill -9 of n2", 200*time.Second, 0, 2)

	// n2 comes back and reads the same.
	c.nodes[1].srv.Restart(t)
	c.conns[1] = c.nodes[1].srv.Conn(t)
	all("n2 restarted", 200*time.Second, 1, 0)
	if late := batch(0, "SELECT count(*) FROM ev WHERE k = -1"); !slices.Equal(late, []string{"'1'"}) {
		t.Fatalf("the late row in the table: %v", late)
	}
}
