package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// jobOwners maps each view to the nodes SHOW CLUSTER says run its job.
func jobOwners(t *testing.T, conn *pgx.Conn) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range showCluster(t, conn) {
		for _, v := range strings.Split(r.jobs, ",") {
			if v != "" {
				out[v] = append(out[v], r.id)
			}
		}
	}
	return out
}

// clusterRows runs q and returns its rows as text, sorted.
func clusterRows(c *pgx.Conn, q string) ([]string, error) {
	rows, err := queryRows(c, q)
	sort.Strings(rows)
	return rows, err
}

// TestClusterJobs: three nodes on embedded etcd. A materialized view over a
// nexmark source is assigned to exactly one node (SHOW CLUSTER and the
// jobs/ key in etcd agree); a read of it on every node is answered by that
// node and equals the batch query over the same source on a separate
// single-node server (the oracle). kill -9 of the owner: once its lease
// expires the coordinator moves the job to a live node, which regenerates
// the deterministic source from the start, and every live node reads the
// same answer again; the killed node restarts, rejoins and reads it too.
// Views over streams (per-node INSERTs) stay refused with 0A000.
func TestClusterJobs(t *testing.T) {
	c := startCluster(t, "jobs", 3, clusterConf{noStorage: true})
	cli, nodes, conns := c.cli, c.nodes, c.conns
	ctx := context.Background()
	source := bidSource(40000, 20000)
	const batch = "SELECT channel, count(*), sum(price), max(date_time) FROM bid GROUP BY channel"
	execAll(t, conns[1], source,
		"CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n, sum(price) AS s, max(date_time) AS last FROM bid GROUP BY channel",
		"CREATE TABLE words (word VARCHAR, n BIGINT)",
		"CREATE MATERIALIZED VIEW word_counts AS SELECT word, count(*) AS cnt FROM words GROUP BY word")

	// The oracle: the batch query over the same (deterministic) source on
	// a single-node server.
	want := oracle(t, []string{source}, nil, batch)[0]

	// Each view's job is assigned to exactly one node, as etcd records it.
	var owner string
	waitUntil(t, 15*time.Second, "both jobs assigned to one node each", func() bool {
		o := jobOwners(t, conns[0])
		if len(o["per_channel"]) != 1 || len(o["word_counts"]) != 1 {
			return false
		}
		owner = o["per_channel"][0]
		return true
	})
	resp, err := cli.Get(ctx, "/streamdb/jobs/jobs/per_channel")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != owner {
		t.Fatalf("etcd jobs/per_channel = %v (%v), SHOW CLUSTER says %s", resp, err, owner)
	}
	readAll := func(live []int, what string) {
		t.Helper()
		for _, i := range live {
			var got []string
			var logged time.Time
			waitUntil(t, 60*time.Second, fmt.Sprintf("%s: per_channel on %s to equal the batch query", what, nodes[i].id), func() bool {
				got, err = clusterRows(conns[i], "SELECT * FROM per_channel")
				ok := err == nil && strings.Join(got, "\n") == strings.Join(want, "\n")
				if !ok && time.Since(logged) > 5*time.Second {
					logged = time.Now()
					t.Logf("%s on %s: %d rows, %v", what, nodes[i].id, len(got), err)
				}
				return ok
			})
		}
	}
	readAll([]int{0, 1, 2}, "before the kill")
	// Only the owner started the job (each start is logged by the node).
	for _, n := range nodes {
		ran := strings.Contains(n.srv.Output(), `running the job assigned here" view=per_channel`)
		if ran != (n.id == owner) {
			t.Errorf("%s started per_channel's job: %t; the owner is %s", n.id, ran, owner)
		}
	}
	t.Logf("per_channel runs on %s; %d rows read alike on every node", owner, len(want))

	// Views over streams, or reads mixing them, stay refused.
	for _, q := range []string{"SELECT * FROM word_counts", "SELECT * FROM per_channel, word_counts", "SELECT count(*) FROM bid"} {
		if _, err := queryRows(conns[0], q); sqlstate(err) != "0A000" {
			t.Errorf("%s: %v, want 0A000", q, err)
		}
	}

	// kill -9 the owner: the job moves to a live node, readable again.
	var k int
	for i, n := range nodes {
		if n.id == owner {
			k = i
		}
	}
	killedAt := time.Now()
	nodes[k].srv.Kill9()
	var live []int
	for i := range nodes {
		if i != k {
			live = append(live, i)
		}
	}
	var next string
	waitUntil(t, 30*time.Second, "per_channel reassigned to a live node", func() bool {
		o := jobOwners(t, conns[live[0]])
		if len(o["per_channel"]) != 1 || o["per_channel"][0] == owner {
			return false
		}
		next = o["per_channel"][0]
		return true
	})
	t.Logf("after kill -9 of %s, per_channel moved to %s in %s", owner, next, time.Since(killedAt).Round(time.Millisecond))
	readAll(live, "after the kill")

	// The killed node rejoins and reads through the new owner.
	nodes[k].srv.Restart(t)
	conns[k] = nodes[k].srv.Conn(t)
	readAll([]int{k}, "after the rejoin")
	if o := jobOwners(t, conns[k]); len(o["per_channel"]) != 1 {
		t.Fatalf("after the rejoin per_channel runs on %v, want one node", o["per_channel"])
	}
}
