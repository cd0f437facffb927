package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/tests/sqllogic"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// clusterRow is a row of SHOW CLUSTER.
type clusterRow struct {
	id, pg, peer, state string
	expires             time.Time
	coordinator         bool
	jobs                string // the views whose jobs the node runs, comma-separated
}

func showCluster(t *testing.T, conn *pgx.Conn) []clusterRow {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SHOW CLUSTER")
	if err != nil {
		t.Fatalf("SHOW CLUSTER: %v", err)
	}
	var out []clusterRow
	for rows.Next() {
		var r clusterRow
		if err := rows.Scan(&r.id, &r.pg, &r.peer, &r.state, &r.expires, &r.coordinator, &r.jobs); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("SHOW CLUSTER: %v", err)
	}
	return out
}

// etcdLeader is the coordinator as etcd's election records it: the value
// of the oldest key under the election prefix (concurrency.Election's rule).
func etcdLeader(t *testing.T, cli *clientv3.Client, cluster string) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), "/streamdb/"+cluster+"/election/", clientv3.WithFirstCreate()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// catalogOf is a node's user catalog as pg_catalog tells it: each
// relation with its kind and its columns in order.
func catalogOf(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT c.relname, c.relkind, a.attname, format_type(a.atttypid, a.atttypmod)
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
		WHERE c.relkind IN ('r', 'v', 'm', 'f') AND a.attnum > 0 AND c.relname NOT LIKE 'pg\_%' AND c.relname NOT LIKE 'streamdb\_%'
		ORDER BY c.relname, a.attnum`)
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	var out []string
	for rows.Next() {
		var rel, kind, col, typ string
		if err := rows.Scan(&rel, &kind, &col, &typ); err != nil {
			t.Fatal(err)
		}
		out = append(out, rel+"/"+kind+"/"+col+" "+typ)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitUntil polls cond every 50 ms up to limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("not within %v: %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// TestClusterCatalog starts an embedded etcd and three streamdb processes
// in cluster mode (the third configured by the config file's [cluster]
// section): DDL run on any node is applied on every node (each
// node's pg_catalog equals the creating node's, and \d in psql lists it),
// SHOW CLUSTER on every node lists the three nodes with the coordinator
// etcd's election names, statements that would answer for one node are
// refused with 0A000; after kill -9 of the coordinator its lease expires,
// another node coordinates, DDL goes on, and the killed node rejoins and
// catches up.
func TestClusterCatalog(t *testing.T) {
	const ttl = leaseTTL
	c := startCluster(t, "e2e", 3, clusterConf{noStorage: true, configNode: 3})
	cli, nodes, conns := c.cli, c.nodes, c.conns
	ctx := context.Background()

	// DDL on n1 is seen on n2 and n3.
	for _, q := range []string{
		"CREATE TABLE words (word VARCHAR, n BIGINT, ts TIMESTAMP)",
		"CREATE MATERIALIZED VIEW word_counts AS SELECT word, count(*) AS cnt, sum(n) AS total FROM words GROUP BY word",
		"CREATE VIEW long_words AS SELECT word FROM words WHERE length(word) > 5",
		"CREATE SOURCE clicks (user_id BIGINT, url VARCHAR) WITH (connector = 'datagen', number_of_rows = '10')",
	} {
		if _, err := conns[0].Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := catalogOf(t, conns[0])
	if len(want) < 9 || !strings.Contains(strings.Join(want, ","), "word_counts/") {
		t.Fatalf("n1's own catalog lacks what it created: %v", want)
	}
	for i := 1; i < 3; i++ {
		// Submit returns once the submitting node applied the entry; the
		// others apply it by watch, a moment later.
		waitUntil(t, 10*time.Second, nodes[i].id+" to apply n1's DDL", func() bool {
			return strings.Join(catalogOf(t, conns[i]), "\n") == strings.Join(want, "\n")
		})
	}
	if p, err := exec.LookPath("psql"); err == nil {
		host, port, _ := net.SplitHostPort(nodes[2].srv.Addr())
		r := sqllogic.RunPsql(t, host, port, nil, "", "-c", `\d`)
		for _, name := range []string{"words", "word_counts", "long_words", "clicks"} {
			if r.Code != 0 || !strings.Contains(r.Stdout, name) {
				t.Fatalf("%s \\d on n3 (code %d) does not list %s:\n%s%s", p, r.Code, name, r.Stdout, r.Stderr)
			}
		}
	} else if os.Getenv("CI") != "" {
		t.Fatal(err)
	}

	// The same DDL on another node fails there as it would on one node,
	// and the catalogs stay equal; DROP on n3 drops everywhere.
	if _, err := conns[1].Exec(ctx, "CREATE TABLE words (x BIGINT)"); sqlstate(err) != "42P07" {
		t.Fatalf("CREATE TABLE words again on n2: %v, want 42P07", err)
	}
	if _, err := conns[2].Exec(ctx, "DROP VIEW long_words"); err != nil {
		t.Fatal(err)
	}
	want = catalogOf(t, conns[2])
	if strings.Contains(strings.Join(want, ","), "long_words") {
		t.Fatalf("long_words still in n3's catalog after its DROP: %v", want)
	}
	for i := 0; i < 2; i++ {
		waitUntil(t, 10*time.Second, nodes[i].id+" to apply the DROP", func() bool {
			return strings.Join(catalogOf(t, conns[i]), "\n") == strings.Join(want, "\n")
		})
	}

	// Concurrent DDL on all three nodes: every node ends with every table.
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.Connect(ctx, n.srv.ConnString())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close(ctx)
			for j := 0; j < 4; j++ {
				if _, err := c.Exec(ctx, fmt.Sprintf("CREATE TABLE t_%d_%d (k BIGINT)", i, j)); err != nil {
					t.Errorf("node %s: %v", n.id, err)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	tables := func(c *pgx.Conn) string {
		var s string
		for _, r := range catalogOf(t, c) {
			if strings.HasPrefix(r, "t_") {
				s += r + ";"
			}
		}
		return s
	}
	wantTables := ""
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			wantTables += fmt.Sprintf("t_%d_%d/r/k bigint;", i, j)
		}
	}
	for i := range conns {
		waitUntil(t, 10*time.Second, nodes[i].id+" to list the twelve tables", func() bool { return tables(conns[i]) == wantTables })
	}

	// What would answer for one node is refused.
	for _, q := range []string{
		"INSERT INTO words VALUES ('a', 1, '2026-01-01 00:00:00')",
		"SELECT * FROM words",
		"SELECT * FROM word_counts",
		"SELECT count(*) FROM clicks",
		"SHOW CHECKPOINTS",
		"CHECKPOINT",
		"SET checkpoint.interval = '5s'",
		"CREATE SINK s FROM word_counts WITH (connector = 'kafka', topic = 'x')",
		"CREATE ROLE r",
	} {
		_, err := conns[1].Exec(ctx, q)
		if sqlstate(err) != "0A000" || !strings.Contains(err.Error(), "cluster mode") {
			t.Errorf("%s on n2: %v, want 0A000 naming cluster mode", q, err)
		}
	}
	if _, err := conns[1].Exec(ctx, "SET application_name = 'x'"); err != nil {
		t.Errorf("a session setting in cluster mode: %v", err)
	}
	var one int
	if err := conns[1].QueryRow(ctx, "SELECT 1 + 0").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 + 0 in cluster mode: %v %v", one, err)
	}

	// SHOW CLUSTER: the three nodes with their addresses, the same on
	// every node, one coordinator, the one etcd's election names.
	coord := etcdLeader(t, cli, "e2e")
	if coord == "" {
		t.Fatal("etcd has no coordinator")
	}
	for i, c := range conns {
		rows := showCluster(t, c)
		if len(rows) != 3 {
			t.Fatalf("SHOW CLUSTER on %s: %d rows, want 3: %+v", nodes[i].id, len(rows), rows)
		}
		coords := 0
		for j, r := range rows {
			n := nodes[j]
			if r.id != n.id || r.pg != n.srv.Addr() || r.peer != n.peer || r.state != "alive" {
				t.Fatalf("SHOW CLUSTER row %d on %s: %+v, want %s %s %s alive", j, nodes[i].id, r, n.id, n.srv.Addr(), n.peer)
			}
			if left := time.Until(r.expires); left <= 0 || left > ttl+time.Second {
				t.Fatalf("SHOW CLUSTER on %s: lease of %s expires in %v, want within the %v TTL", nodes[i].id, r.id, left, ttl)
			}
			if r.coordinator {
				coords++
				if r.id != coord {
					t.Fatalf("SHOW CLUSTER on %s names %s the coordinator, etcd %s", nodes[i].id, r.id, coord)
				}
			}
		}
		if coords != 1 {
			t.Fatalf("SHOW CLUSTER on %s: %d coordinators", nodes[i].id, coords)
		}
	}

	// kill -9 of the coordinator: its lease expires within the TTL (plus
	// etcd's check interval), another node coordinates, DDL goes on.
	ci := int(coord[1] - '1')
	var lastExpiry time.Time
	for _, r := range showCluster(t, conns[(ci+1)%3]) {
		if r.id == coord {
			lastExpiry = r.expires
		}
	}
	nodes[ci].srv.Kill9()
	killed := time.Now()
	survivor := conns[(ci+1)%3]
	took := waitUntil(t, ttl+10*time.Second, "the killed coordinator to leave SHOW CLUSTER", func() bool {
		rows := showCluster(t, survivor)
		if len(rows) != 2 {
			return false
		}
		for _, r := range rows {
			if r.coordinator {
				return r.id != coord
			}
		}
		return false
	})
	if gone := killed.Add(took); gone.Before(lastExpiry.Add(-time.Second)) {
		t.Fatalf("%s left at %v, before its lease's expiry %v", coord, gone, lastExpiry)
	}
	t.Logf("%s killed; its lease expired and another node coordinated after %v", coord, took)
	newCoord := etcdLeader(t, cli, "e2e")
	if newCoord == "" || newCoord == coord {
		t.Fatalf("etcd's coordinator after the kill: %q", newCoord)
	}
	if _, err := survivor.Exec(ctx, "CREATE TABLE after_failover (x TEXT)"); err != nil {
		t.Fatalf("DDL after the failover: %v", err)
	}

	// The killed node comes back (its lease has expired): it catches up
	// from the log and is a member again.
	nodes[ci].srv.Restart(t)
	back := nodes[ci].srv.Conn(t)
	waitUntil(t, 10*time.Second, coord+" to catch up", func() bool {
		return strings.Join(catalogOf(t, back), "\n") == strings.Join(catalogOf(t, survivor), "\n")
	})
	if !strings.Contains(strings.Join(catalogOf(t, back), ","), "after_failover/r/x text") {
		t.Fatal("the rejoined node lacks the table created while it was down")
	}
	rows := showCluster(t, back)
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	sort.Strings(ids)
	if strings.Join(ids, ",") != "n1,n2,n3" {
		t.Fatalf("SHOW CLUSTER after the rejoin: %v", ids)
	}

	// A node stopped with SIGTERM exits 0 and leaves at once: it revokes
	// its lease instead of letting it expire.
	back.Close(ctx)
	nodes[ci].srv.Stop()
	if rows := showCluster(t, survivor); len(rows) != 2 {
		t.Fatalf("SHOW CLUSTER right after %s stopped: %+v, want the two others", coord, rows)
	}
}

// TestShowClusterSingleNode: without --cluster-etcd, SHOW CLUSTER is
// refused and DDL, INSERT and reads work as they always did.
func TestShowClusterSingleNode(t *testing.T) {
	conn := StartServer(t, "", "--http", "").Conn(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "SHOW CLUSTER"); sqlstate(err) != "0A000" || !strings.Contains(err.Error(), "--cluster-etcd") {
		t.Fatalf("SHOW CLUSTER on a single node: %v, want 0A000 naming --cluster-etcd", err)
	}
	for _, q := range []string{"CREATE TABLE w (x BIGINT)", "INSERT INTO w VALUES (1), (2)"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM w").Scan(&n); err != nil || n != 2 {
		t.Fatalf("count: %d %v, want 2", n, err)
	}
}
