package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClusterDistributedRestore: recovery of a distributed view from its
// last committed checkpoint (docs/design/cluster.md, step 6). Three nodes
// with the shared stream log (kfake) and --cluster-storage (gofakes3); a
// GROUP BY view over a table of three partitions with many groups. Once
// the view equals the batch query and a checkpoint at or after that epoch
// is committed (etcd's dataflow/v/checkpoint, which names each node's
// snapshot), every record of the topic is deleted (as retention would),
// so a replay from the topic's start would lose those rows; then n2 is
// killed with kill -9 and the survivors insert more. Every survivor must
// read the view as the batch query before the deletion plus the batch
// query of the rows after it (the topic now holds those alone), which
// only a restore of every instance (n2's included) from the snapshots can
// give; each survivor logs the restore with the checkpoint's epoch and
// its splits' positions, which are past the deleted records; SHOW JOBS
// lists each survivor's part with the restored epoch, and SHOW CLUSTER
// the committed checkpoint. n2, restarted, reads the same.
func TestClusterDistributedRestore(t *testing.T) {
	ctx := context.Background()
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "distrestore", 3, clusterConf{extra: []string{"--cluster-kafka", kafkaAddr}})
	execAll(t, c.conns[0],
		"CREATE TABLE stream (k BIGINT, x BIGINT) WITH (partitions = 3)",
		"CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n, sum(x) AS s FROM stream GROUP BY k")

	const groups = 20000
	next := 0
	copyRows := func(i, n int) {
		t.Helper()
		var b strings.Builder
		for r := next; r < next+n; r++ {
			fmt.Fprintf(&b, "%d\t%d\n", r*7919%groups, r%13-4)
		}
		next += n
		if _, err := c.conns[i].PgConn().CopyFrom(ctx, strings.NewReader(b.String()), "COPY stream FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	const view = "SELECT k, n, s FROM v"
	const batch = "SELECT k, count(*), sum(x) FROM stream GROUP BY k"
	// exact waits until the view read on node i equals want (sorted).
	exact := func(what string, i int, want func() []string) time.Duration {
		t.Helper()
		return waitUntil(t, 60*time.Second, what+" on "+c.nodes[i].id, func() bool {
			got, ok := c.distRows(t, i, view)
			return ok && slices.Equal(got, want())
		})
	}
	batchRows := func(i int) []string {
		t.Helper()
		rows, err := queryRows(c.conns[i], batch)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(rows)
		return rows
	}

	for i := 0; i < 3; i++ {
		copyRows(i, 20000)
	}
	before := batchRows(0)
	if len(before) != groups {
		t.Fatalf("the batch query has %d groups, want %d", len(before), groups)
	}
	for i := 0; i < 3; i++ {
		exact("60000 rows", i, func() []string { return before })
	}
	// The committed epoch now holds every row; wait for a checkpoint at
	// or after it.
	pfx := "/streamdb/" + c.name + "/dataflow/v/"
	var committed struct{ Epoch uint64 }
	etcdJSON(t, c, pfx+"epoch", &committed)
	var ck struct {
		Epoch     uint64
		Snapshots map[string]string
	}
	waitUntil(t, 30*time.Second, "a checkpoint of v at or after the epoch that holds every row", func() bool {
		return etcdJSON(t, c, pfx+"checkpoint", &ck) && ck.Epoch >= committed.Epoch
	})
	if len(ck.Snapshots) != 3 {
		t.Fatalf("checkpoint %d names snapshots %v, want one per node", ck.Epoch, ck.Snapshots)
	}
	for node, prefix := range ck.Snapshots {
		m, err := c.s3.Remote(t, c.storage+"/nodes/"+node+"/dist/v").ReadManifest(ctx, prefix)
		if err != nil || m.Epoch != ck.Epoch || len(m.Jobs) != 1 || m.Jobs[0].Name != "v" {
			t.Fatalf("checkpoint %d: %s's snapshot %s: %+v, %v", ck.Epoch, node, prefix, m, err)
		}
	}
	t.Logf("committed epoch %d, checkpoint %d", committed.Epoch, ck.Epoch)
	waitUntil(t, 10*time.Second, "SHOW CLUSTER names v's committed checkpoint", func() bool {
		for _, r := range showCluster(t, c.conns[0]) {
			if strings.Contains(r.jobs, "v[gen ") && strings.Contains(r.jobs, "; checkpoint ") {
				return true
			}
		}
		return false
	})

	// The topic loses every record so far: a replay from its start could
	// not count them.
	topics := kafkaTopicsWith(t, kafkaAddr, "streamdb.distrestore.stream.")
	if len(topics) != 1 {
		t.Fatalf("the table's topic: %v", topics)
	}
	for p := int32(0); p < 3; p++ {
		kafkaDeleteRecords(t, kafkaAddr, topics[0], p, -1)
	}
	if rows := batchRows(0); len(rows) != 0 {
		t.Fatalf("the batch query after the deletion: %d groups, want none", len(rows))
	}

	killed := time.Now()
	c.nodes[1].srv.Kill9()
	copyRows(0, 3000)
	copyRows(2, 2000)
	after := batchRows(0)
	want := func() []string { return mergeAgg(t, before, after) }
	took := exact("after kill -9 of n2", 0, want)
	exact("after kill -9 of n2", 2, want)
	t.Logf("after kill -9 of n2: view exact on n1 %v after the kill (%v after the rows went in); %d groups",
		time.Since(killed).Round(time.Millisecond), took.Round(time.Millisecond), groups)

	// Each survivor restored its new instances and splits from the
	// checkpoint, at positions past the deleted records.
	restored := regexp.MustCompile(`distributed job part restored.* gen=(\d+) epoch=(\d+) instances="?\[([0-9 ]*)\]"? offsets=("[^"]*"|\S*) .* took=(\S+)`)
	for _, i := range []int{0, 2} {
		m := restored.FindAllStringSubmatch(c.nodes[i].srv.Output(), -1)
		if len(m) == 0 {
			t.Fatalf("%s logged no restore:\n%s", c.nodes[i].id, c.nodes[i].srv.Output())
		}
		last := m[len(m)-1]
		ep, _ := strconv.ParseUint(last[2], 10, 64)
		if ep < ck.Epoch || last[3] == "" {
			t.Fatalf("%s restored %q, want epoch >= %d with instances", c.nodes[i].id, last[0], ck.Epoch)
		}
		last[4] = strings.Trim(last[4], `"`)
		for _, so := range strings.Fields(last[4]) {
			if _, off, _ := strings.Cut(so, ":"); off == "0" {
				t.Fatalf("%s restored split position %s: want past the deleted records (%q)", c.nodes[i].id, so, last[0])
			}
		}
		t.Logf("%s: gen %s restored from epoch %s: instances [%s], positions %s, in %s", c.nodes[i].id, last[1], last[2], last[3], last[4], last[5])
	}

	// SHOW JOBS on any node lists each live node's part of v with the
	// checkpoint it restored.
	jobs, err := clusterShowJobs(c.conns[2])
	if err != nil {
		t.Fatal(err)
	}
	partsOn := map[string]string{}
	for _, j := range jobs {
		if j.name == "v" {
			if j.state != "RUNNING" || j.restoredEpoch < int64(ck.Epoch) || !strings.Contains(j.part, "instances ") {
				t.Fatalf("SHOW JOBS row of v on %s: %+v, want RUNNING, restored from epoch >= %d, with its instances", j.node, j, ck.Epoch)
			}
			partsOn[j.node] = j.part
		}
	}
	if len(partsOn) != 2 || partsOn["n1"] == "" || partsOn["n3"] == "" {
		t.Fatalf("SHOW JOBS lists parts of v %v, want one on n1 and one on n3", partsOn)
	}
	t.Logf("SHOW JOBS parts of v: %v", partsOn)

	// n2 comes back and reads the same.
	c.nodes[1].srv.Restart(t)
	c.conns[1] = c.nodes[1].srv.Conn(t)
	copyRows(1, 1000)
	after = batchRows(1)
	for _, i := range []int{1, 0, 2} {
		exact("n2 restarted", i, want)
	}
}

// etcdJSON reads key from the test's etcd into v; false if it is absent.
func etcdJSON(t *testing.T, c *testCluster, key string, v any) bool {
	t.Helper()
	resp, err := c.cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return false
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, v); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return true
}

// mergeAgg adds two results of SELECT k, count(*), sum(x) ... GROUP BY k
// (rows as queryRows gives them) group by group, sorted.
func mergeAgg(t *testing.T, a, b []string) []string {
	t.Helper()
	type agg struct{ n, s int64 }
	m := map[string]agg{}
	for _, rows := range [][]string{a, b} {
		for _, r := range rows {
			f := strings.Split(r, " | ")
			if len(f) != 3 {
				t.Fatalf("row %q", r)
			}
			n, err1 := strconv.ParseInt(strings.Trim(f[1], "'"), 10, 64)
			s, err2 := strconv.ParseInt(strings.Trim(f[2], "'"), 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("row %q", r)
			}
			g := m[f[0]]
			m[f[0]] = agg{g.n + n, g.s + s}
		}
	}
	out := make([]string, 0, len(m))
	for k, g := range m {
		out = append(out, fmt.Sprintf("%s | '%d' | '%d'", k, g.n, g.s))
	}
	slices.Sort(out)
	return out
}
