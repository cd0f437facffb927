package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClusterDistributedJoin: an inner equi-join of two tables in the
// shared stream log with a GROUP BY by the join key runs distributed on
// three nodes (WITH (distributed = true) is refused otherwise): both
// tables' partitions are read on every node, both sides shuffled by the
// join key over the exchange to the join's instances, and each join
// instance's rows aggregated on its own node. Reads of the view on every
// node equal the batch query; after a checkpoint n2 is killed with kill -9
// and the survivors insert into both tables: exact again on the
// survivors and on n2 restarted. A GROUP BY by another column, or a LEFT
// JOIN, asked to run distributed, is refused with 0A000 and the reason.
func TestClusterDistributedJoin(t *testing.T) {
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "distjoin", 3, clusterConf{extra: []string{"--cluster-kafka", kafkaAddr}})
	execAll(t, c.conns[0],
		"CREATE TABLE a (k BIGINT, v BIGINT) WITH (partitions = 3)",
		"CREATE TABLE b (k BIGINT, w BIGINT) WITH (partitions = 3)",
		`CREATE MATERIALIZED VIEW j WITH (distributed = true) AS
		   SELECT a.k, count(*) AS n, sum(a.v) AS sv, max(b.w) AS mw FROM a JOIN b ON a.k = b.k GROUP BY a.k`)
	for q, why := range map[string]string{
		"CREATE MATERIALIZED VIEW bad WITH (distributed = true) AS SELECT a.v, count(*) AS n FROM a JOIN b ON a.k = b.k GROUP BY a.v":        "GROUP BY is not by the join key",
		"CREATE MATERIALIZED VIEW bad WITH (distributed = true) AS SELECT a.k, count(b.w) AS n FROM a LEFT JOIN b ON a.k = b.k GROUP BY a.k": "not an inner equi-join",
	} {
		_, err := c.conns[1].Exec(t.Context(), q)
		if sqlstate(err) != "0A000" || !strings.Contains(err.Error(), why) {
			t.Fatalf("%s: %v, want 0A000 saying %q", q, err, why)
		}
	}
	const view = "SELECT k, n, sv, mw FROM j"
	const batch = "SELECT a.k, count(*), sum(a.v), max(b.w) FROM a JOIN b ON a.k = b.k GROUP BY a.k"
	next := 0
	write := func(i int, table string, n int) {
		t.Helper()
		var rows []string
		for r := next; r < next+n; r++ {
			rows = append(rows, fmt.Sprintf("(%d, %d)", r*7919%61, r%17-8))
		}
		next += n
		execAll(t, c.conns[i], "INSERT INTO "+table+" VALUES "+strings.Join(rows, ", "))
	}
	exact := func(what string, nodes ...int) {
		t.Helper()
		for _, i := range nodes {
			var got, want []string
			start := time.Now()
			waitUntil(t, 60*time.Second, what+": "+view+" on "+c.nodes[i].id, func() bool {
				var err error
				if want, err = queryRows(c.conns[i], batch); err != nil {
					t.Fatalf("%s: the batch query on %s: %v", what, c.nodes[i].id, err)
				}
				slices.Sort(want)
				var ok bool
				got, ok = c.distRows(t, i, view)
				return ok && len(want) > 0 && slices.Equal(got, want)
			})
			t.Logf("%s: exact on %s (%d keys) after %v", what, c.nodes[i].id, len(want), time.Since(start).Round(time.Millisecond))
		}
	}
	// Three INSERTs from a node reach the three partitions of a table.
	for i := 0; i < 3; i++ {
		for s := 0; s < 3; s++ {
			write(i, "a", 40)
			write((i+1)%3, "b", 30)
		}
	}
	exact("three nodes", 0, 1, 2)
	parts := 0
	for _, r := range showCluster(t, c.conns[2]) {
		if strings.Contains(r.jobs, "j[gen ") && strings.Contains(r.jobs, "instances ") {
			parts++
		}
	}
	if parts != 3 {
		t.Fatalf("SHOW CLUSTER lists parts of j on %d nodes, want 3", parts)
	}

	pfx := "/streamdb/" + c.name + "/dataflow/j/"
	var committed struct{ Epoch uint64 }
	etcdJSON(t, c, pfx+"epoch", &committed)
	var ck struct{ Epoch uint64 }
	waitUntil(t, 30*time.Second, "a checkpoint of j at or after the epoch that holds every row", func() bool {
		return etcdJSON(t, c, pfx+"checkpoint", &ck) && ck.Epoch >= committed.Epoch
	})
	t.Logf("j: committed epoch %d, checkpoint %d", committed.Epoch, ck.Epoch)

	c.nodes[1].srv.Kill9()
	for s := 0; s < 3; s++ {
		write(0, "b", 25)
		write(2, "a", 35)
	}
	exact("after kill -9 of n2", 0, 2)
	if !strings.Contains(c.nodes[0].srv.Output()+c.nodes[2].srv.Output(), "distributed job part restored") {
		t.Fatal("no survivor logged a restore of j from the checkpoint")
	}
	c.nodes[1].srv.Restart(t)
	c.conns[1] = c.nodes[1].srv.Conn(t)
	write(1, "a", 20)
	write(1, "b", 20)
	exact("n2 restarted", 1, 0, 2)
}
