package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterCheckpointStatement: CHECKPOINT on a node that runs no job
// makes every node that runs one checkpoint it, upload it to the shared
// storage and commit its pointer in etcd before the statement returns:
// right after it, each view's pointer names its owner and was committed
// after the statement was sent. Without --cluster-storage CHECKPOINT stays
// refused (TestClusterCatalog).
func TestClusterCheckpointStatement(t *testing.T) {
	c := startCluster(t, "ckstmt", 3, clusterConf{})
	ctx := context.Background()
	execAll(t, c.conns[0],
		bidSource(2000000, 5000),
		"CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n FROM bid GROUP BY channel",
		"CREATE MATERIALIZED VIEW per_bidder AS SELECT bidder, max(price) AS top FROM bid GROUP BY bidder")
	views := []string{"per_channel", "per_bidder"}
	owners := c.owners(t, c.conns[0], views...)
	if owners["per_channel"] == owners["per_bidder"] {
		t.Fatalf("both jobs on %s: want them spread", owners["per_channel"])
	}
	idle := 0
	for i, n := range c.nodes {
		if n.id != owners["per_channel"] && n.id != owners["per_bidder"] {
			idle = i
		}
	}
	waitUntil(t, 20*time.Second, "both jobs running", func() bool {
		jobs, err := clusterShowJobs(c.conns[idle])
		return err == nil && len(jobs) == 2 && jobs[0].state == "RUNNING" && jobs[1].state == "RUNNING"
	})
	for round := 0; round < 2; round++ {
		sent := time.Now()
		if _, err := c.conns[idle].Exec(ctx, "CHECKPOINT"); err != nil {
			t.Fatalf("CHECKPOINT on %s: %v", c.nodes[idle].id, err)
		}
		for _, v := range views {
			p := readPointer(t, c.cli, c.name, v)
			if p == nil || p.Node != owners[v] || p.At.Before(sent.Add(-time.Second)) {
				t.Fatalf("round %d: the pointer of %s after CHECKPOINT: %+v, want one of %s committed after %s", round, v, p, owners[v], sent)
			}
			if !strings.HasSuffix(p.Storage, "/nodes/"+owners[v]) {
				t.Fatalf("pointer %+v: not in %s's storage", p, owners[v])
			}
		}
	}
}

// channelTotals is the view per_channel (channel, count, sum of prices)
// over ledgerRows' lines, as text rows sorted by channel.
func channelTotals(lines []string) []string {
	n, sum := map[string]int64{}, map[string]int64{}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		var p int64
		fmt.Sscan(f[2], &p)
		n[f[1]]++
		sum[f[1]] += p
	}
	var out []string
	for ch := range n {
		out = append(out, fmt.Sprintf("%s %d %d", ch, n[ch], sum[ch]))
	}
	sort.Strings(out)
	return out
}

// readChannelTotals reads per_channel on conn as channelTotals' rows.
func readChannelTotals(conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(context.Background(), "SELECT channel, n, s FROM per_channel")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ch string
		var n, s int64
		if err := rows.Scan(&ch, &n, &s); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s %d %d", ch, n, s))
	}
	sort.Strings(out)
	return out, rows.Err()
}

// kafkaTopicsWith lists the topics whose names start with prefix.
func kafkaTopicsWith(t *testing.T, addr, prefix string) []string {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), kafkaClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tp := range resp.Topics {
		if tp.Topic != nil && strings.HasPrefix(*tp.Topic, prefix) {
			out = append(out, *tp.Topic)
		}
	}
	return out
}

// TestClusterSavepointRestore: two nodes with the shared stream log
// (Kafka) and shared storage. A savepoint of a view over a table, taken
// on the node that does not run the view's job, is recorded in etcd with
// its part in the owner's storage; more rows go in; the owner is killed
// with kill -9 and the survivor takes the job over. The table's records
// after the savepoint are deleted from the topic (as retention would), so
// only a restore can bring the view back to the savepoint: RESTORE FROM
// SAVEPOINT on the survivor makes the view equal the rows before the
// savepoint exactly, and rows inserted afterwards are counted once.
// DROP SAVEPOINT removes the record and the dead node's part.
func TestClusterSavepointRestore(t *testing.T) {
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "spx", 2, clusterConf{extra: []string{"--cluster-kafka", kafkaAddr}})
	ctx := context.Background()
	execAll(t, c.conns[0], bidsTable,
		"CREATE MATERIALIZED VIEW per_channel WITH (distributed = false) AS SELECT channel, count(*) AS n, sum(price) AS s FROM bids GROUP BY channel")
	owner := c.owners(t, c.conns[0], "per_channel")["per_channel"]
	ow := c.index(owner)
	other := 1 - ow
	oc := c.conns[other]
	waitView := func(what string, want []string) {
		t.Helper()
		var got []string
		var err error
		waitUntil(t, 30*time.Second, what, func() bool {
			got, err = readChannelTotals(oc)
			return err == nil && strings.Join(got, ",") == strings.Join(want, ",")
		})
	}
	a := ledgerRows(0, 200)
	execAll(t, oc, insertSQL(a))
	waitView("the view to hold the first rows", channelTotals(a))

	if _, err := oc.Exec(ctx, "CREATE SAVEPOINT sp"); err != nil {
		t.Fatalf("CREATE SAVEPOINT on %s (not the owner %s): %v", c.nodes[other].id, owner, err)
	}
	if _, err := c.conns[ow].Exec(ctx, "CREATE SAVEPOINT sp"); sqlstate(err) != "42710" {
		t.Fatalf("CREATE SAVEPOINT sp again: %v, want 42710", err)
	}
	sps, err := queryRows(c.conns[ow], "SHOW SAVEPOINTS")
	if err != nil || len(sps) != 1 || !strings.HasPrefix(sps[0], "'sp' | 'per_channel' |") {
		t.Fatalf("SHOW SAVEPOINTS: %v %v", sps, err)
	}
	if _, err := c.s3.Remote(t, c.storage+"/nodes/"+owner).ReadManifest(ctx, "savepoints/sp"); err != nil {
		t.Fatalf("the owner's part of sp: %v", err)
	}

	b := ledgerRows(200, 150)
	execAll(t, oc, insertSQL(b))
	waitView("the view to hold every row", channelTotals(append(append([]string(nil), a...), b...)))

	// kill -9 of the owner: the survivor takes the job over.
	c.nodes[ow].srv.Kill9()
	waitUntil(t, 30*time.Second, "per_channel running on "+c.nodes[other].id, func() bool {
		jobs, err := clusterShowJobs(oc)
		return err == nil && len(jobs) == 1 && jobs[0].node == c.nodes[other].id && jobs[0].state == "RUNNING"
	})
	waitView("the survivor's view to hold every row", channelTotals(append(append([]string(nil), a...), b...)))

	// The rows after the savepoint leave the topic: only the savepoint
	// can bring the view back to the first rows.
	topics := kafkaTopicsWith(t, kafkaAddr, "streamdb.spx.bids.")
	if len(topics) != 1 {
		t.Fatalf("the table's topic: %v", topics)
	}
	kafkaDeleteRecords(t, kafkaAddr, topics[0], 0, -1)

	if _, err := oc.Exec(ctx, "RESTORE per_channel FROM SAVEPOINT nosuch"); sqlstate(err) != "42704" {
		t.Fatalf("RESTORE from a missing savepoint: %v, want 42704", err)
	}
	if _, err := oc.Exec(ctx, "RESTORE FROM CHECKPOINT 1"); err == nil {
		t.Fatalf("RESTORE FROM CHECKPOINT in cluster mode: accepted")
	}
	if _, err := oc.Exec(ctx, "RESTORE FROM SAVEPOINT sp"); err != nil {
		t.Fatalf("RESTORE FROM SAVEPOINT sp on the survivor: %v", err)
	}
	waitView("the view to equal the rows before the savepoint", channelTotals(a))
	cc := ledgerRows(350, 120)
	execAll(t, oc, insertSQL(cc))
	waitView("the view to hold the savepoint's rows and the new ones, once", channelTotals(append(append([]string(nil), a...), cc...)))

	// DROP SAVEPOINT: the record and the dead node's part go.
	execAll(t, oc, "DROP SAVEPOINT sp")
	if sps, err := queryRows(oc, "SHOW SAVEPOINTS"); err != nil || len(sps) != 0 {
		t.Fatalf("SHOW SAVEPOINTS after DROP: %v %v", sps, err)
	}
	if _, err := c.s3.Remote(t, c.storage+"/nodes/"+owner).ReadManifest(ctx, "savepoints/sp"); err == nil {
		t.Fatalf("the dead owner's part of sp is still in its storage")
	}
	if _, err := oc.Exec(ctx, "DROP SAVEPOINT sp"); sqlstate(err) != "42704" {
		t.Fatalf("DROP SAVEPOINT of a dropped savepoint: %v, want 42704", err)
	}
}

// jobCounts is the number of jobs SHOW CLUSTER says each node runs.
func jobCounts(t *testing.T, conn *pgx.Conn) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range showCluster(t, conn) {
		out[r.id] = 0
		for _, v := range strings.Split(r.jobs, ",") {
			if v != "" {
				out[r.id]++
			}
		}
	}
	return out
}

// TestClusterRebalance: two nodes run four views over a rate-limited
// nexmark source, two each. A third node joins while the source is still
// being read: the coordinator moves one job to it at a checkpoint (the old
// owner checkpoints, the new one restores), and every view ends equal to
// its batch query on a single-node server. Then the views of two nodes
// are dropped, leaving 2, 0, 0 jobs: ALTER CLUSTER REBALANCE on a node
// that does not coordinate moves one job (its notice names it), SHOW
// CLUSTER and SHOW JOBS show the new placement, the moved job was
// restored from the old owner's checkpoint, and the views still equal
// their batch queries.
func TestClusterRebalance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three-node rebalance scenario")
	}
	c := startCluster(t, "rebal", 2, clusterConf{})
	ctx := context.Background()
	source := bidSource(150000, 15000)
	views := map[string]string{
		"v_channel": "SELECT channel, count(*) AS n, sum(price) AS s FROM bid GROUP BY channel",
		"v_auction": "SELECT auction % 50 AS a, count(*) AS n, max(price) AS top FROM bid GROUP BY auction % 50",
		"v_bidder":  "SELECT bidder % 30 AS b, count(*) AS n, min(price) AS low FROM bid GROUP BY bidder % 30",
		"v_cheap":   "SELECT channel, count(*) AS n FROM bid WHERE price < 1000 GROUP BY channel",
	}
	names := []string{"v_auction", "v_bidder", "v_channel", "v_cheap"}
	execAll(t, c.conns[0], source)
	for _, v := range names {
		execAll(t, c.conns[0], "CREATE MATERIALIZED VIEW "+v+" AS "+views[v])
	}
	queries := make([]string, len(names))
	for i, v := range names {
		queries[i] = views[v]
	}
	rows := oracle(t, []string{source}, nil, queries...)
	want := map[string][]string{}
	for i, v := range names {
		want[v] = rows[i]
	}
	c.owners(t, c.conns[0], names...)
	if n := jobCounts(t, c.conns[0]); n["n1"] != 2 || n["n2"] != 2 {
		t.Fatalf("jobs per node: %v, want 2 and 2", n)
	}

	// A third node joins while the source is read: one job moves to it.
	k := c.add(t)
	waitUntil(t, 30*time.Second, "a job moved to n3", func() bool {
		n := jobCounts(t, c.conns[0])
		return n["n3"] == 1 && n["n1"]+n["n2"] == 3
	})
	equalAll := func(conn *pgx.Conn, vs []string) {
		t.Helper()
		for _, v := range vs {
			var got []string
			var err error
			waitUntil(t, 60*time.Second, v+" to equal its batch query", func() bool {
				got, err = clusterRows(conn, "SELECT * FROM "+v)
				return err == nil && strings.Join(got, "\n") == strings.Join(want[v], "\n")
			})
		}
	}
	equalAll(c.conns[k], names)

	// Leave 2, 0, 0 jobs: drop the views of the two less loaded nodes.
	owners := c.owners(t, c.conns[0], names...)
	counts := jobCounts(t, c.conns[0])
	busy := ""
	for id, n := range counts {
		if n == 2 {
			busy = id
		}
	}
	var kept []string
	for _, v := range names {
		if owners[v] == busy {
			kept = append(kept, v)
		} else {
			execAll(t, c.conns[0], "DROP MATERIALIZED VIEW "+v)
		}
	}
	waitUntil(t, 10*time.Second, "2, 0, 0 jobs", func() bool {
		n := jobCounts(t, c.conns[0])
		return n[busy] == 2 && n["n1"]+n["n2"]+n["n3"] == 2
	})
	var coord int
	for _, r := range showCluster(t, c.conns[0]) {
		if r.coordinator {
			coord = c.index(r.id)
		}
	}
	other := (coord + 1) % 3
	tag, err := c.conns[other].Exec(ctx, "ALTER CLUSTER REBALANCE")
	if err != nil || tag.String() != "ALTER CLUSTER" {
		t.Fatalf("ALTER CLUSTER REBALANCE on %s: %v %v", c.nodes[other].id, tag, err)
	}
	var moved clusterJobRow
	waitUntil(t, 30*time.Second, "the jobs spread 1, 1, 0 and the moved one running", func() bool {
		n := jobCounts(t, c.conns[other])
		if n[busy] != 1 {
			return false
		}
		jobs, err := clusterShowJobs(c.conns[other])
		if err != nil || len(jobs) != 2 {
			return false
		}
		for _, j := range jobs {
			if j.node != busy && j.state == "RUNNING" {
				moved = j
				return true
			}
		}
		return false
	})
	if !strings.Contains(moved.restoredFrom, "/nodes/"+busy+"/checkpoints/chk-") {
		t.Fatalf("the moved job %+v: want it restored from %s's checkpoint", moved, busy)
	}
	if !strings.Contains(c.nodes[coord].srv.OutputSinceStart(), `job moved to balance the nodes" job=`+moved.name) {
		t.Fatalf("the coordinator %s did not log moving %s", c.nodes[coord].id, moved.name)
	}
	equalAll(c.conns[other], kept)
}

// TestClusterMetrics: each node's /metrics has the cluster figures: one
// coordinator among the nodes, the owner's owned jobs, and on the node
// that forwarded a read the reads and bytes it relayed.
func TestClusterMetrics(t *testing.T) {
	c, web := startWebCluster(t, "metrics", 2)
	execAll(t, c.conns[0],
		bidSource(20000, 0),
		"CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n FROM bid GROUP BY channel")
	owner := c.owners(t, c.conns[0], "per_channel")["per_channel"]
	ow := c.index(owner)
	other := 1 - ow
	var rows []string
	waitUntil(t, 20*time.Second, "a read of per_channel forwarded to "+owner, func() bool {
		var err error
		rows, err = clusterRows(c.conns[other], "SELECT * FROM per_channel")
		return err == nil && len(rows) > 0
	})
	coords := 0.0
	for i, addr := range web {
		id := c.nodes[i].id
		fams := scrape(t, addr)
		coord, ok := metricValue(fams, "streamdb_cluster_coordinator", "node", id)
		if !ok {
			t.Fatalf("/metrics of %s has no streamdb_cluster_coordinator", id)
		}
		coords += coord
		jobs, _ := metricValue(fams, "streamdb_cluster_owned_jobs", "node", id)
		reads, _ := metricValue(fams, "streamdb_cluster_forwarded_reads_total", "node", id)
		bytes, _ := metricValue(fams, "streamdb_cluster_forwarded_bytes_total", "node", id)
		if i == ow && (jobs != 1 || reads != 0) {
			t.Errorf("the owner %s: owned_jobs %v forwarded_reads %v, want 1 and 0", id, jobs, reads)
		}
		if i == other && (jobs != 0 || reads < 1 || bytes <= 0) {
			t.Errorf("%s, which forwarded the reads: owned_jobs %v forwarded_reads %v bytes %v, want 0, >= 1, > 0", id, jobs, reads, bytes)
		}
	}
	if coords != 1 {
		t.Errorf("%v coordinators in /metrics, want 1", coords)
	}
}
