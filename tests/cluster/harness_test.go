package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/cluster/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// leaseTTL is every test node's --cluster-lease-ttl: a killed node's jobs
// move within about this long.
const leaseTTL = 2 * time.Second

// clusterNode is one streamdb process of a cluster test.
type clusterNode struct {
	id, peer string
	srv      *Server
}

// clusterConf says how startCluster starts its nodes.
type clusterConf struct {
	ep         string   // etcd's client URL; "" starts an embedded etcd
	noStorage  bool     // no fake S3 and no --cluster-storage
	configNode int      // node n<configNode> takes its settings from the config file's [cluster] section (0: none)
	extra      []string // more flags for every node (--cluster-kafka, --http)
	// proxied puts a TCP proxy between each node and etcd
	// (testCluster.proxies, by node index), to cut one node off.
	proxied bool
	env     map[string][]string // more environment, by node id
	// settings are top-level lines of every node's config file
	// (checkpoint.interval = "off"), passed with --config.
	settings string
}

// testCluster is a cluster of streamdb processes on one etcd, with a fake
// S3 as --cluster-storage unless conf.noStorage.
type testCluster struct {
	name, ep, storage string
	conf              clusterConf
	s3                *fakeS3
	cli               *clientv3.Client
	nodes             []*clusterNode
	conns             []*pgx.Conn
	proxies           []*tcpProxy // with conf.proxied: node i's way to etcd
}

// startCluster starts n nodes n1, n2, ... of the cluster name (lease TTL
// leaseTTL) and a connection to each, and a client of its etcd.
func startCluster(t *testing.T, name string, n int, conf clusterConf) *testCluster {
	t.Helper()
	c := &testCluster{name: name, ep: conf.ep, conf: conf}
	if c.ep == "" {
		c.ep = etcdtest.Start(t)
	}
	if !conf.noStorage {
		c.s3, c.storage = newFakeS3(t, "ops"), "s3://ops/"+name
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	c.cli = cli
	for i := 0; i < n; i++ {
		c.add(t)
	}
	return c
}

// add starts node n<k> (k = the number of nodes so far + 1) and returns its index.
func (c *testCluster) add(t *testing.T) int {
	t.Helper()
	peer, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("n%d", len(c.nodes)+1)
	ep := c.ep
	if c.conf.proxied {
		var p *tcpProxy
		p, ep = proxyURL(t, c.ep)
		c.proxies = append(c.proxies, p)
	}
	args := []string{"--http", "", "--cluster-etcd", ep, "--node-id", id, "--peer-listen", peer,
		"--cluster-name", c.name, "--cluster-lease-ttl", leaseTTL.String()}
	if c.storage != "" {
		args = append(args, "--cluster-storage", c.storage)
	}
	if len(c.nodes)+1 == c.conf.configNode { // the config file's [cluster] section instead of the flags
		cfg := filepath.Join(t.TempDir(), "streamdb.toml")
		toml := c.conf.settings + fmt.Sprintf("\n[cluster]\netcd = %q\nnode_id = %q\npeer_listen = %q\nname = %q\nlease_ttl = %q\n",
			ep, id, peer, c.name, leaseTTL.String())
		if c.storage != "" {
			toml += fmt.Sprintf("storage = %q\n", c.storage)
		}
		if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		args = []string{"--http", "", "--config", cfg}
	} else if c.conf.settings != "" {
		cfg := filepath.Join(t.TempDir(), "streamdb.toml")
		if err := os.WriteFile(cfg, []byte(c.conf.settings+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", cfg)
	}
	env := c.conf.env[id]
	if c.s3 != nil {
		env = append(c.s3.Env(), env...)
	}
	n := &clusterNode{id: id, peer: peer, srv: startWithEnv(t, env, "", append(args, c.conf.extra...)...)}
	if p := n.srv.Arg("--peer-listen"); p != "" {
		n.peer = p // drawn again if another process took it first
	}
	c.nodes = append(c.nodes, n)
	c.conns = append(c.conns, n.srv.Conn(t))
	return len(c.nodes) - 1
}

// index is the position of node id.
func (c *testCluster) index(id string) int {
	for i, n := range c.nodes {
		if n.id == id {
			return i
		}
	}
	return -1
}

// owners waits until every view has one owner by SHOW CLUSTER on conn and
// returns them.
func (c *testCluster) owners(t *testing.T, conn *pgx.Conn, views ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	waitUntil(t, 20*time.Second, "every view assigned to one node", func() bool {
		o := jobOwners(t, conn)
		for _, v := range views {
			if len(o[v]) != 1 {
				return false
			}
			out[v] = o[v][0]
		}
		return true
	})
	return out
}

// bidsTable is the table the ledgers of acknowledged rows write
// (ledgerRows).
const bidsTable = "CREATE TABLE bids (id BIGINT, channel VARCHAR, price BIGINT, ts TIMESTAMP, note TEXT)"

// bidSource is a nexmark bid source of events rows at rate rows a second
// (0: unpaced): deterministic, so every node and a single-node oracle read
// the same rows.
func bidSource(events, rate int) string {
	paced := ""
	if rate > 0 {
		paced = fmt.Sprintf(", nexmark.rate = %d", rate)
	}
	return fmt.Sprintf(`CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, date_time TIMESTAMP)
	  WITH (connector = 'nexmark', nexmark.table = 'bid', nexmark.events = %d%s)`, events, paced)
}

// oracle runs setup on a new single-node server, copies ledger (COPY text
// lines of bids, see ledgerRows) into bids, then runs each query as a batch
// query there and returns each query's rows, sorted; the server is stopped
// before it returns.
func oracle(t *testing.T, setup, ledger []string, queries ...string) [][]string {
	t.Helper()
	single := StartServer(t, "", "--http", "")
	sc := single.Conn(t)
	execAll(t, sc, setup...)
	if len(ledger) > 0 {
		in := strings.NewReader(strings.Join(ledger, "\n") + "\n")
		if _, err := sc.PgConn().CopyFrom(context.Background(), in, "COPY bids FROM STDIN"); err != nil {
			t.Fatal(err)
		}
	}
	out := make([][]string, len(queries))
	for i, q := range queries {
		rows, err := clusterRows(sc, q)
		if err != nil || len(rows) == 0 {
			t.Fatalf("oracle %s: %d rows, %v", q, len(rows), err)
		}
		out[i] = rows
	}
	sc.Close(context.Background())
	single.Stop()
	return out
}

// startKafkaCluster starts an in-process Kafka and three nodes with the
// shared stream log on it (no --cluster-storage), and runs ddl on n1.
func startKafkaCluster(t *testing.T, name string, ddl ...string) ([]*clusterNode, []*pgx.Conn) {
	t.Helper()
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, name, 3, clusterConf{noStorage: true, extra: []string{"--cluster-kafka", kafkaAddr}})
	execAll(t, c.conns[0], ddl...)
	return c.nodes, c.conns
}

// distRows reads q on node i, its rows sorted; false if it was refused
// with 55000 (a distributed view whose new generation has committed
// nothing yet). Any other error fails the test.
func (c *testCluster) distRows(t *testing.T, i int, q string) ([]string, bool) {
	t.Helper()
	got, err := queryRows(c.conns[i], q)
	if err != nil {
		if sqlstate(err) != "55000" {
			t.Fatalf("%s on %s: %v, want rows or 55000", q, c.nodes[i].id, err)
		}
		return nil, false
	}
	slices.Sort(got)
	return got, true
}
