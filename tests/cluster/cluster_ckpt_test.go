package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/cluster/etcdtest"
	"github.com/streamdb/streamdb/tests/sqllogic"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// clusterJobRow is one row of SHOW JOBS, read by column name.
type clusterJobRow struct {
	name, state, node, restoredFrom string
	part                            string // a distributed view's part on node
	rowsIn, restoredEpoch           int64
}

func clusterShowJobs(c *pgx.Conn) ([]clusterJobRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := c.Query(ctx, "SHOW JOBS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []clusterJobRow
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		r := clusterJobRow{restoredEpoch: -1}
		for i, f := range rows.FieldDescriptions() {
			switch f.Name {
			case "name":
				r.name, _ = vals[i].(string)
			case "state":
				r.state, _ = vals[i].(string)
			case "node":
				r.node, _ = vals[i].(string)
			case "restored_from":
				r.restoredFrom, _ = vals[i].(string)
			case "part":
				r.part, _ = vals[i].(string)
			case "rows_in":
				r.rowsIn, _ = vals[i].(int64)
			case "restored_epoch":
				if v, ok := vals[i].(int64); ok {
					r.restoredEpoch = v
				}
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ckptPointer is the part of an etcd checkpoint pointer the test reads.
type ckptPointer struct {
	Node         string    `json:"node"`
	CheckpointID uint64    `json:"checkpoint_id"`
	Epoch        uint64    `json:"epoch"`
	Storage      string    `json:"storage"`
	Manifest     string    `json:"manifest"`
	At           time.Time `json:"at"`
}

func readPointer(t *testing.T, cli *clientv3.Client, cluster, view string) *ckptPointer {
	t.Helper()
	resp, err := cli.Get(context.Background(), "/streamdb/"+cluster+"/ckpt/"+view)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	var p ckptPointer
	if err := json.Unmarshal(resp.Kvs[0].Value, &p); err != nil {
		t.Fatalf("pointer %s: %v", resp.Kvs[0].Value, err)
	}
	return &p
}

// TestClusterCheckpoints runs the shared-checkpoint scenario on an
// embedded etcd where Debian's etcd is not installed; where it is (CI),
// TestClusterCheckpointsDebianEtcd runs the same scenario on it, and the
// other cluster tests cover the embedded etcd.
func TestClusterCheckpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three-node failover scenario")
	}
	if _, err := os.Stat(debianEtcd); err == nil {
		t.Skipf("%s exists: TestClusterCheckpointsDebianEtcd runs this scenario on it", debianEtcd)
	}
	clusterCheckpointScenario(t, etcdtest.Start(t))
}

// debianEtcd is the etcd server binary of Debian's etcd-server package.
const debianEtcd = "/usr/bin/etcd"

// TestClusterCheckpointsDebianEtcd runs the same scenario on Debian's etcd
// server binary (package etcd-server, /usr/bin/etcd) instead of the
// embedded one; .ci/run installs it, and with CI set its absence fails.
func TestClusterCheckpointsDebianEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three-node failover scenario")
	}
	bin := debianEtcd
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: %v (Debian package etcd-server)", bin, err)
		}
		t.Skipf("%s: %v (Debian package etcd-server)", bin, err)
	}
	clusterCheckpointScenario(t, sqllogic.StartEtcdBinary(t, bin))
}

// clusterCheckpointScenario: three streamdb processes on etcd ep and a
// fake S3, with --cluster-storage (the third node by the config file's
// [cluster] storage key). A view over a rate-limited nexmark source (a
// GROUP BY over every auction: state that takes the whole source to
// rebuild) runs on one node, which uploads its checkpoints under
// nodes/<id>/ in S3 and commits a pointer per checkpoint in etcd. kill -9
// of the owner, once a pointer exists: the new owner restores the job
// from that checkpoint, and its SHOW JOBS row (gathered on any node, with
// the node column) names the checkpoint and its epoch, and it read fewer
// rows than the source holds; the view then equals the batch query of a
// single-node server on every live node. psql with host=dead,live fails
// over to the live node. The killed node restarts: the pointer stays the
// new owner's and moves forward only.
func clusterCheckpointScenario(t *testing.T, ep string) {
	const name = "ck"
	c := startCluster(t, name, 3, clusterConf{ep: ep, configNode: 3})
	cli, nodes, conns, s3, storage := c.cli, c.nodes, c.conns, c.s3, c.storage
	source := bidSource(300000, 10000)
	const batch = "SELECT auction, count(*), sum(price), max(price) FROM bid GROUP BY auction"
	execAll(t, conns[0], source,
		"CREATE MATERIALIZED VIEW per_auction AS SELECT auction, count(*) AS n, sum(price) AS s, max(price) AS top FROM bid GROUP BY auction")

	// The oracle: the batch query on a single-node server.
	res := oracle(t, []string{source}, nil, batch, "SELECT count(*) FROM bid")
	want := res[0]
	total, err := strconv.ParseInt(strings.Trim(res[1][0], "'"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	// The owner commits a pointer to a checkpoint it uploaded under its
	// own prefix.
	var first *ckptPointer
	waitUntil(t, 60*time.Second, "a checkpoint pointer for per_auction in etcd", func() bool {
		first = readPointer(t, cli, name, "per_auction")
		return first != nil
	})
	owner := first.Node
	if first.Storage != storage+"/nodes/"+owner || first.Manifest != fmt.Sprintf("checkpoints/chk-%d", first.CheckpointID) {
		t.Fatalf("pointer %+v: want storage %s/nodes/%s", first, storage, owner)
	}
	manifest := fmt.Sprintf("/ops/%s/nodes/%s/%s/manifest.json", name, owner, first.Manifest)
	uploaded := strings.Contains(strings.Join(s3.Puts(), "\n"), manifest)
	if !uploaded {
		t.Fatalf("no upload of %s", manifest)
	}
	// SHOW JOBS on a node that does not run the job lists it with its node.
	var k int
	for i, n := range nodes {
		if n.id == owner {
			k = i
		}
	}
	other := (k + 1) % 3
	jobs, err := clusterShowJobs(conns[other])
	if err != nil || len(jobs) != 1 || jobs[0].name != "per_auction" || jobs[0].node != owner {
		t.Fatalf("SHOW JOBS on %s: %+v %v; want per_auction on %s", nodes[other].id, jobs, err, owner)
	}

	// kill -9 of the owner while the source is still being read.
	nodes[k].srv.Kill9()
	last := readPointer(t, cli, name, "per_auction") // nothing moves it until the new owner commits
	var live []int
	for i := range nodes {
		if i != k {
			live = append(live, i)
		}
	}
	var restored clusterJobRow
	waitUntil(t, 60*time.Second, "per_auction running on a live node", func() bool {
		jobs, err := clusterShowJobs(conns[live[0]])
		if err != nil || len(jobs) != 1 || jobs[0].node == owner || jobs[0].node == "" {
			return false
		}
		restored = jobs[0]
		return true
	})
	wantFrom := fmt.Sprintf("%s/nodes/%s/%s", storage, owner, last.Manifest)
	if restored.restoredFrom != wantFrom || restored.restoredEpoch != int64(last.Epoch) {
		t.Fatalf("new owner %s restored from %q epoch %d, want %q epoch %d", restored.node, restored.restoredFrom,
			restored.restoredEpoch, wantFrom, last.Epoch)
	}
	t.Logf("per_auction moved from %s to %s, restored from %s (epoch %d)", owner, restored.node, restored.restoredFrom, restored.restoredEpoch)

	// libpq's multi-host failover: the dead node first, then a live one.
	if _, err := exec.LookPath("psql"); err == nil {
		dh, dp, _ := net.SplitHostPort(nodes[k].srv.Addr())
		lh, lp, _ := net.SplitHostPort(nodes[live[0]].srv.Addr())
		r := sqllogic.RunPsql(t, dh+","+lh, dp+","+lp, nil, "", "-At", "-c", "SHOW JOBS")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "per_auction|") || !strings.Contains(r.Stdout, "|"+restored.node+"|") {
			t.Fatalf("psql host=%s,%s port=%s,%s SHOW JOBS (code %d):\n%s%s", dh, lh, dp, lp, r.Code, r.Stdout, r.Stderr)
		}
	} else if os.Getenv("CI") != "" {
		t.Fatal(err)
	}

	// The view ends equal to the batch query, read on every live node;
	// the restored job read fewer rows than the source holds.
	for _, i := range live {
		var got []string
		waitUntil(t, 90*time.Second, "per_auction on "+nodes[i].id+" to equal the batch query", func() bool {
			got, err = clusterRows(conns[i], "SELECT * FROM per_auction")
			return err == nil && strings.Join(got, "\n") == strings.Join(want, "\n")
		})
	}
	jobs, err = clusterShowJobs(conns[live[1]])
	if err != nil || len(jobs) != 1 || jobs[0].node != restored.node || jobs[0].rowsIn >= total {
		t.Fatalf("SHOW JOBS after the catch-up: %+v %v; want per_auction on %s having read fewer than the source's %d rows",
			jobs, err, restored.node, total)
	}
	t.Logf("the restored job read %d of the source's %d rows", jobs[0].rowsIn, total)

	// The killed node comes back: the pointer stays the new owner's and
	// only moves forward.
	nodes[k].srv.Restart(t)
	conns[k] = nodes[k].srv.Conn(t)
	base := readPointer(t, cli, name, "per_auction")
	if base == nil || base.Node != restored.node {
		// The new owner commits its first pointer at its first export.
		waitUntil(t, 60*time.Second, "the new owner's pointer", func() bool {
			base = readPointer(t, cli, name, "per_auction")
			return base != nil && base.Node == restored.node
		})
	}
	seen := 0
	waitUntil(t, 60*time.Second, "two more pointers from the new owner after the restart", func() bool {
		p := readPointer(t, cli, name, "per_auction")
		if p.Node != restored.node || p.CheckpointID < base.CheckpointID || p.Epoch < base.Epoch {
			t.Fatalf("pointer after the restart of %s: %+v, was %+v", owner, p, base)
		}
		if p.CheckpointID > base.CheckpointID {
			seen++
			base = p
		}
		return seen >= 2
	})
	jobs, err = clusterShowJobs(conns[k])
	if err != nil || len(jobs) != 1 || jobs[0].node != restored.node {
		t.Fatalf("SHOW JOBS on the restarted %s: %+v %v", owner, jobs, err)
	}
	if strings.Contains(nodes[k].srv.OutputSinceStart(), `running the job assigned here" view=per_auction`) {
		t.Fatalf("the restarted %s started per_auction, which %s runs", owner, restored.node)
	}
}
