package cluster

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// scaleWriter INSERTs ledger rows, round robin over the live nodes, until
// stopped. A statement that fails (its node was killed or left) is in
// doubt: its rows may or may not be in the table.
type scaleWriter struct {
	mu      sync.Mutex // held for each statement; the test takes it to pause the writer or change the nodes
	c       *testCluster
	live    map[int]bool
	conns   map[int]*pgx.Conn
	next    int
	acked   map[int]bool // ids acknowledged
	indoubt map[int]bool // ids of failed statements
	turn    int
	stmts   int
}

func (w *scaleWriter) step() {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []int
	for i := range w.c.nodes {
		if w.live[i] {
			ids = append(ids, i)
		}
	}
	if len(ids) == 0 {
		return
	}
	w.turn++
	k := ids[w.turn%len(ids)]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := w.conns[k]
	if conn == nil {
		var err error
		if conn, err = pgx.Connect(ctx, w.c.nodes[k].srv.ConnString()); err != nil {
			return
		}
		w.conns[k] = conn
	}
	const n = 20
	rows := ledgerRows(w.next, n)
	from := w.next
	w.next += n
	_, err := conn.Exec(ctx, insertSQL(rows))
	for id := from; id < from+n; id++ {
		if err == nil {
			w.acked[id] = true
		} else {
			w.indoubt[id] = true
		}
	}
	w.stmts++
	if err != nil {
		conn.Close(context.Background())
		delete(w.conns, k)
	}
}

// startScaleWriter starts a scaleWriter over c's nodes live; it writes
// until the test ends.
func startScaleWriter(t *testing.T, c *testCluster, live ...int) *scaleWriter {
	w := &scaleWriter{c: c, live: map[int]bool{}, conns: map[int]*pgx.Conn{}, acked: map[int]bool{}, indoubt: map[int]bool{}}
	for _, i := range live {
		w.live[i] = true
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			w.step()
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	return w
}

// leave takes node k out of the writer's rotation and closes its
// connection.
func (w *scaleWriter) leave(k int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live[k] = false
	if c := w.conns[k]; c != nil {
		c.Close(context.Background())
		delete(w.conns, k)
	}
}

func (w *scaleWriter) join(k int) {
	w.mu.Lock()
	w.live[k] = true
	w.mu.Unlock()
}

// check pauses the writer and compares every view on every running
// node with the oracle over the table's rows.
//
// A node killed inside an INSERT leaves its Kafka transaction open:
// read_committed readers (the table's reads, the views' jobs) do not
// read past it until the live nodes fence it when the node's lease
// expires (or Kafka's transaction timeout, a minute, if that is missed).
// After a kill the views must equal the batch query over the table's
// readable rows; after the restart (all means so) every acknowledged row
// must be readable too.
func (w *scaleWriter) check(t *testing.T, running map[int]bool, what string, all bool) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var reader *pgx.Conn
	for i := range w.c.nodes {
		if running[i] {
			reader = w.c.conns[i]
			break
		}
	}
	var lines []string
	var why string
	logged := time.Now()
	defer func() {
		if t.Failed() {
			t.Logf("%s: last mismatch: %s", what, why)
		}
	}()
	waitUntil(t, 150*time.Second, what+": every view equal to its batch query over the table", func() bool {
		if why != "" && time.Since(logged) > 10*time.Second {
			logged = time.Now()
			t.Logf("%s: waiting: %s", what, why)
		}
		time.Sleep(200 * time.Millisecond)
		var err error
		lines, err = copyOutLines(reader, "COPY bids TO STDOUT")
		if err != nil {
			t.Fatalf("%s: COPY bids: %v", what, err)
		}
		seen := map[int]bool{}
		for _, l := range lines {
			id, _ := strconv.Atoi(strings.SplitN(l, "\t", 2)[0])
			if seen[id] {
				t.Fatalf("%s: id %d twice in the table", what, id)
			}
			seen[id] = true
			if !w.acked[id] && !w.indoubt[id] {
				t.Fatalf("%s: id %d in the table was never written", what, id)
			}
		}
		for id := range w.acked {
			if all && !seen[id] {
				why = fmt.Sprintf("acknowledged id %d not readable yet", id)
				return false
			}
		}
		want := scaleOracle(lines)
		for i := range w.c.nodes {
			if !running[i] {
				continue
			}
			for _, v := range scaleViewNames {
				got, err := copyOutLines(w.c.conns[i], "COPY "+v+" TO STDOUT")
				if err != nil || strings.Join(got, "\n") != strings.Join(want[v], "\n") {
					why = fmt.Sprintf("%s on %s: %v %.200v, want %.200v", v, w.c.nodes[i].id, err, got, want[v])
					return false
				}
			}
		}
		return true
	})
	t.Logf("%s: views equal their batch queries over %d rows (%d acknowledged, %d in doubt, %d statements)", what, len(lines), len(w.acked), len(w.indoubt), w.stmts)
}

// scaleViews are the views of the scenario and their batch queries,
// computed in Go from the table's rows (ledgerRows' lines).
var scaleViews = map[string]string{
	"per_channel": "SELECT channel, count(*) AS n, sum(price) AS s FROM bids GROUP BY channel",
	"per_mod":     "SELECT price % 7 AS m, count(*) AS n, max(id) AS top FROM bids GROUP BY price % 7",
	"per_rest":    "SELECT id % 5 AS r, count(*) AS n, sum(price) AS s FROM bids GROUP BY id % 5",
}

var scaleViewNames = []string{"per_channel", "per_mod", "per_rest"}

func scaleOracle(lines []string) map[string][]string {
	type agg struct{ n, s, top int }
	ch, md, rs := map[string]*agg{}, map[int]*agg{}, map[int]*agg{}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		id, _ := strconv.Atoi(f[0])
		price, _ := strconv.Atoi(f[2])
		a := ch[f[1]]
		if a == nil {
			a = &agg{}
			ch[f[1]] = a
		}
		a.n++
		a.s += price
		b := md[price%7]
		if b == nil {
			b = &agg{top: -1}
			md[price%7] = b
		}
		b.n++
		b.top = max(b.top, id)
		r := rs[id%5]
		if r == nil {
			r = &agg{}
			rs[id%5] = r
		}
		r.n++
		r.s += price
	}
	out := map[string][]string{}
	for k, a := range ch {
		out["per_channel"] = append(out["per_channel"], fmt.Sprintf("%s\t%d\t%d", k, a.n, a.s))
	}
	for k, b := range md {
		out["per_mod"] = append(out["per_mod"], fmt.Sprintf("%d\t%d\t%d", k, b.n, b.top))
	}
	for k, r := range rs {
		out["per_rest"] = append(out["per_rest"], fmt.Sprintf("%d\t%d\t%d", k, r.n, r.s))
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// TestClusterScale: the cluster scales 2 → 3 → 2 nodes while a writer
// INSERTs on every live node, then a random node is killed with kill -9
// and restarted, 5 times (STREAMDB_CLUSTER_KILLS sets the number, e.g.
// 20). After each step the writer pauses and every view, read on every
// live node, equals its batch query (computed in Go) over the table's rows,
// and the table (its topic) holds every acknowledged row once, plus only
// rows of statements in doubt (those that failed as their node died).
//
// The node that leaves in the 2 → 3 → 2 step is stopped with SIGTERM and
// owns a job: it hands the job off at a checkpoint before it exits (its
// pointer is committed as it leaves), and the job's new owner restores
// exactly that checkpoint (SHOW JOBS restored_from and restored_epoch).
func TestClusterScale(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: scale and kill -9 scenario")
	}
	kills := 5
	if v := os.Getenv("STREAMDB_CLUSTER_KILLS"); v != "" {
		kills, _ = strconv.Atoi(v)
	}
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "scale", 2, clusterConf{extra: []string{"--cluster-kafka", kafkaAddr}})
	execAll(t, c.conns[0], bidsTable)
	for _, v := range scaleViewNames {
		execAll(t, c.conns[0], "CREATE MATERIALIZED VIEW "+v+" WITH (distributed = false) AS "+scaleViews[v])
	}
	w := startScaleWriter(t, c, 0, 1)
	running := map[int]bool{0: true, 1: true}
	check := func(what string, all bool) { t.Helper(); w.check(t, running, what, all) }
	time.Sleep(time.Second)
	check("2 nodes", true)

	// 2 → 3: a third node joins and takes a job (the others ran 2 and 1).
	k := c.add(t)
	running[k] = true
	w.join(k)
	waitUntil(t, 30*time.Second, "a job moved to n3", func() bool { return jobCounts(t, c.conns[0])["n3"] == 1 })
	time.Sleep(time.Second)
	check("3 nodes", true)

	// 3 → 2: a node that owns a job leaves with SIGTERM.
	owners := c.owners(t, c.conns[0], scaleViewNames...)
	view := "per_channel"
	leaver := c.index(owners[view])
	w.leave(leaver)
	delete(running, leaver)
	c.conns[leaver].Close(context.Background())
	stopped := time.Now()
	c.nodes[leaver].srv.Stop()
	p := readPointer(t, c.cli, c.name, view)
	if p == nil || p.Node != c.nodes[leaver].id || p.At.Before(stopped.Add(-time.Second)) {
		t.Fatalf("the pointer of %s after %s left: %+v, want its handoff checkpoint committed after %s", view, c.nodes[leaver].id, p, stopped)
	}
	var survivor int
	for i := range running {
		survivor = i
	}
	var moved clusterJobRow
	waitUntil(t, 30*time.Second, view+" running on a survivor", func() bool {
		jobs, err := clusterShowJobs(c.conns[survivor])
		for _, j := range jobs {
			if err == nil && j.name == view && j.state == "RUNNING" && j.node != c.nodes[leaver].id {
				moved = j
				return true
			}
		}
		return false
	})
	if !strings.Contains(moved.restoredFrom, fmt.Sprintf("/nodes/%s/checkpoints/chk-%d", c.nodes[leaver].id, p.CheckpointID)) || moved.restoredEpoch != int64(p.Epoch) {
		t.Fatalf("%s on its new owner: %+v, want it restored from the handoff checkpoint %+v", view, moved, p)
	}
	check("back to 2 nodes after SIGTERM", true)

	// kill -9 of a random running node, then its restart, repeated. Each
	// kill's recovery is timed (on a survivor, while the writer writes):
	// until the victim leaves the membership (its lease expired), until
	// SHOW CLUSTER names a live owner for each of its views, and until a
	// read of every view is answered again (read-unavailability: the
	// views the victim ran are unreadable until their new owner restored
	// them).
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var gone, reassigned, unreadable []time.Duration
	for round := 0; round < kills; round++ {
		var ids []int
		for i := range running {
			ids = append(ids, i)
		}
		sort.Ints(ids)
		victim := ids[rng.Intn(len(ids))]
		other := ids[0]
		if other == victim {
			other = ids[1]
		}
		time.Sleep(time.Duration(200+rng.Intn(800)) * time.Millisecond)
		owned := 0
		for _, o := range jobOwners(t, c.conns[other]) {
			if len(o) == 1 && o[0] == c.nodes[victim].id {
				owned++
			}
		}
		killed := time.Now()
		c.nodes[victim].srv.Kill9()
		w.leave(victim)
		delete(running, victim)
		g := waitUntil(t, 30*time.Second, c.nodes[victim].id+" gone from SHOW CLUSTER", func() bool {
			for _, r := range showCluster(t, c.conns[other]) {
				if r.id == c.nodes[victim].id {
					return false
				}
			}
			return true
		})
		m := waitUntil(t, 30*time.Second, "the views of "+c.nodes[victim].id+" reassigned", func() bool {
			o := jobOwners(t, c.conns[other])
			for _, v := range scaleViewNames {
				if len(o[v]) != 1 || o[v][0] == c.nodes[victim].id {
					return false
				}
			}
			return true
		})
		waitUntil(t, 60*time.Second, "every view readable on "+c.nodes[other].id, func() bool {
			for _, v := range scaleViewNames {
				if _, err := copyOutLines(c.conns[other], "COPY "+v+" TO STDOUT"); err != nil {
					return false
				}
			}
			return true
		})
		u := time.Since(killed)
		m += g
		gone, reassigned, unreadable = append(gone, g), append(reassigned, m), append(unreadable, u)
		t.Logf("kill %d of %s (ran %d of %d views): gone from the membership after %v, its views reassigned after %v, every view readable after %v",
			round+1, c.nodes[victim].id, owned, len(scaleViewNames), g.Round(time.Millisecond), m.Round(time.Millisecond), u.Round(time.Millisecond))
		check(fmt.Sprintf("kill %d of %s", round+1, c.nodes[victim].id), false)
		c.nodes[victim].srv.Restart(t)
		c.conns[victim] = c.nodes[victim].srv.Conn(t)
		running[victim] = true
		w.join(victim)
		check(fmt.Sprintf("rejoin %d of %s", round+1, c.nodes[victim].id), true)
	}
	if kills > 0 {
		t.Logf("recovery over %d kills (lease TTL %v): membership median %v p99 %v; reassigned median %v p99 %v; read-unavailability median %v p99 %v",
			kills, leaseTTL, quantile(gone, 0.5), quantile(gone, 0.99), quantile(reassigned, 0.5), quantile(reassigned, 0.99),
			quantile(unreadable, 0.5), quantile(unreadable, 0.99))
	}
}

// quantile is the q-quantile of ds (nearest rank), rounded to the
// millisecond.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))].Round(time.Millisecond)
}
