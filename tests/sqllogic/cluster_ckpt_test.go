package sqllogic

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/cluster/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// clusterJobRow is one row of SHOW JOBS, read by column name.
type clusterJobRow struct {
	name, state, node, restoredFrom string
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
	clusterCheckpointScenario(t, startDebianEtcd(t, bin))
}

// startDebianEtcd runs a one-member etcd from bin on loopback ports and
// returns its client URL; it is killed when the test ends.
func startDebianEtcd(t *testing.T, bin string) string {
	t.Helper()
	ca, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	pa, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	client, peer := "http://"+ca, "http://"+pa
	var out outputLog
	cmd := exec.Command(bin, "--name", "t", "--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "t="+peer,
		"--unsafe-no-fsync")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("etcd output:\n%s", out.tail(16<<10))
		}
	})
	// A quiet client: it logs every refused dial while etcd starts.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	waitUntil(t, 30*time.Second, "Debian's etcd to answer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "health")
		return err == nil
	})
	return client
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
	const ttl = 2 * time.Second
	const name = "ck"
	s3 := newFakeS3(t, "ckpt")
	const storage = "s3://ckpt/cluster"
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()

	nodes := make([]*clusterNode, 3)
	conns := make([]*pgx.Conn, 3)
	for i := range nodes {
		peer, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("n%d", i+1)
		args := []string{"--http", "", "--cluster-etcd", ep, "--node-id", id, "--peer-listen", peer,
			"--cluster-name", name, "--cluster-lease-ttl", ttl.String(), "--cluster-storage", storage}
		if i == 2 {
			cfg := filepath.Join(t.TempDir(), "streamdb.toml")
			toml := fmt.Sprintf("[cluster]\netcd = %q\nnode_id = %q\npeer_listen = %q\nname = %q\nlease_ttl = %q\nstorage = %q\n",
				ep, id, peer, name, ttl.String(), storage)
			if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
			args = []string{"--http", "", "--config", cfg}
		}
		nodes[i] = &clusterNode{id: id, peer: peer, srv: startWithEnv(t, s3.env(), "", args...)}
		conns[i] = nodes[i].srv.Conn(t)
	}
	const source = `CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, date_time TIMESTAMP)
	  WITH (connector = 'nexmark', nexmark.table = 'bid', nexmark.events = 300000, nexmark.rate = 10000)`
	const batch = "SELECT auction, count(*), sum(price), max(price) FROM bid GROUP BY auction"
	for _, q := range []string{source,
		"CREATE MATERIALIZED VIEW per_auction AS SELECT auction, count(*) AS n, sum(price) AS s, max(price) AS top FROM bid GROUP BY auction",
	} {
		if _, err := conns[0].Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// The oracle: the batch query on a single-node server.
	single := StartServer(t, "", "--http", "")
	sc := single.Conn(t)
	execAll(t, sc, source)
	want, err := clusterRows(sc, batch)
	if err != nil || len(want) == 0 {
		t.Fatalf("oracle %s: %v %v", batch, len(want), err)
	}
	var total int64
	if err := sc.QueryRow(ctx, "SELECT count(*) FROM bid").Scan(&total); err != nil {
		t.Fatal(err)
	}
	single.Stop()

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
	manifest := fmt.Sprintf("/ckpt/cluster/nodes/%s/%s/manifest.json", owner, first.Manifest)
	s3.mu.Lock()
	uploaded := strings.Contains(strings.Join(s3.puts, "\n"), manifest)
	s3.mu.Unlock()
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
		r := (&psqlTarget{host: dh + "," + lh, port: dp + "," + lp}).run(t, "", "-At", "-c", "SHOW JOBS")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "per_auction|") || !strings.Contains(r.stdout, "|"+restored.node+"|") {
			t.Fatalf("psql host=%s,%s port=%s,%s SHOW JOBS (code %d):\n%s%s", dh, lh, dp, lp, r.code, r.stdout, r.stderr)
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
	if strings.Contains(nodes[k].srv.out.sinceStart(), `running the job assigned here" view=per_auction`) {
		t.Fatalf("the restarted %s started per_auction, which %s runs", owner, restored.node)
	}
}
