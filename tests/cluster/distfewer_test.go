package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClusterDistributedFewerInstances: a distributed view with fewer
// aggregate instances than nodes (WITH (parallelism = 2) on three nodes)
// starts: its instances and splits go to two nodes and the third holds no
// part (SHOW CLUSTER lists parts on two nodes; SHOW JOBS a part on those
// two only), and a read on every node, the one without a part included,
// equals the batch query. kill -9 of a node with a part: the survivors
// (the node that held none among them) take its instance and splits, and
// reads are exact again.
func TestClusterDistributedFewerInstances(t *testing.T) {
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "distfewer", 3, clusterConf{extra: []string{"--cluster-kafka", kafkaAddr}})
	execAll(t, c.conns[0],
		"CREATE TABLE stream (k BIGINT, x BIGINT, m NUMERIC) WITH (partitions = 3)",
		"CREATE MATERIALIZED VIEW v WITH (parallelism = 2) AS SELECT k, count(*) AS n, sum(x) AS s, sum(m) AS sm FROM stream GROUP BY k")
	next := 0
	insert := func(i, n int) {
		t.Helper()
		vals := make([]string, n)
		for r := range vals {
			// m's display scales (0 to 3 places) cross the exchange
			// with the rows: sum(m) prints the largest of its group's.
			vals[r] = fmt.Sprintf("(%d, %d, %d%s)", (next+r)*31%41, (next+r)%7, (next+r)%9, []string{"", ".5", ".50", ".125"}[(next+r)*7%11%4])
		}
		next += n
		execAll(t, c.conns[i], "INSERT INTO stream VALUES "+strings.Join(vals, ", "))
	}
	const view, batch = "SELECT k, n, s, sm FROM v", "SELECT k, count(*), sum(x), sum(m) FROM stream GROUP BY k"
	exact := func(what string, idx ...int) {
		t.Helper()
		for _, i := range idx {
			waitUntil(t, 45*time.Second, what+": v on "+c.nodes[i].id, func() bool {
				want, err := queryRows(c.conns[i], batch)
				if err != nil {
					t.Fatal(err)
				}
				got, ok := c.distRows(t, i, view)
				slices.Sort(want)
				return ok && len(want) > 0 && slices.Equal(got, want)
			})
		}
	}
	// partsOn lists the nodes SHOW CLUSTER (on conn i) gives a part of v.
	partsOn := func(i int) []string {
		var ids []string
		for _, r := range showCluster(t, c.conns[i]) {
			if strings.Contains(r.jobs, "v[gen ") {
				ids = append(ids, r.id)
			}
		}
		slices.Sort(ids)
		return ids
	}

	insert(0, 200)
	insert(1, 300)
	insert(2, 100)
	exact("three nodes, two instances", 0, 1, 2)
	parts := partsOn(2)
	if len(parts) != 2 {
		t.Fatalf("SHOW CLUSTER lists parts of v on %v, want two nodes", parts)
	}
	jobs, err := clusterShowJobs(c.conns[0])
	if err != nil {
		t.Fatal(err)
	}
	var jobNodes []string
	for _, j := range jobs {
		if j.name == "v" {
			jobNodes = append(jobNodes, j.node)
		}
	}
	slices.Sort(jobNodes)
	if !slices.Equal(jobNodes, parts) {
		t.Fatalf("SHOW JOBS lists parts of v on %v, SHOW CLUSTER on %v", jobNodes, parts)
	}

	// kill -9 of a node with a part; the node without one takes it over.
	k := c.index(parts[1])
	var live []int
	for i := range c.nodes {
		if i != k {
			live = append(live, i)
		}
	}
	c.nodes[k].srv.Kill9()
	insert(live[0], 150)
	insert(live[1], 150)
	exact("after kill -9 of "+c.nodes[k].id, live...)
	waitUntil(t, 20*time.Second, "parts of v on both survivors", func() bool {
		return slices.Equal(partsOn(live[0]), []string{c.nodes[live[0]].id, c.nodes[live[1]].id})
	})
}
