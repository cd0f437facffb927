package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestClusterDistributedView: three nodes with the shared stream log
// (kfake) and --cluster-storage (gofakes3). A GROUP BY view over a table
// of three partitions has the distributable shape, so it runs as a
// distributed job: every node runs a part (SHOW CLUSTER lists each node's
// instances and splits), and a SELECT of the view on any node, with a
// filter and ORDER BY too, equals the batch query over the table. A view
// WITH (distributed = false) keeps one owner, as before. kill -9 of one
// node while the others insert: reads on the survivors are refused with
// 55000 at most until the new generation commits, then equal the batch
// query again; the killed node restarted reads the same. COPY v TO STDOUT
// reads the gathered rows; INSERT ... SELECT from the view, EMIT CHANGES
// over it and a savepoint of it are refused (0A000). DROP deletes every
// node's snapshots of the view from the storage.
func TestClusterDistributedView(t *testing.T) {
	ctx := context.Background()
	began := time.Now()
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "distview", 3, clusterConf{extra: []string{"--cluster-kafka", kafkaAddr}})
	began = time.Now() // the nodes are up (the first test also builds streamdb)
	execAll(t, c.conns[0],
		"CREATE TABLE stream (k BIGINT, x BIGINT) WITH (partitions = 3)",
		"CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n, sum(x) AS s FROM stream GROUP BY k",
		"CREATE MATERIALIZED VIEW v_one WITH (distributed = false) AS SELECT k, count(*) AS n FROM stream GROUP BY k")
	// What cannot run distributed is refused when asked for, and a bad
	// value or an unknown option is refused as before.
	for q, code := range map[string]string{
		"CREATE MATERIALIZED VIEW bad WITH (distributed = true) AS SELECT count(*) AS n FROM stream":                "0A000",
		"CREATE MATERIALIZED VIEW bad WITH (distributed = maybe) AS SELECT k, count(*) AS n FROM stream GROUP BY k": "22023",
		"CREATE MATERIALIZED VIEW bad WITH (spread = true) AS SELECT k, count(*) AS n FROM stream GROUP BY k":       "22023",
		"SELECT v.k, v_one.n FROM v JOIN v_one ON v.k = v_one.k":                                                    "0A000",
		"INSERT INTO stream SELECT k, n FROM v":                                                                     "0A000",
		"SELECT k, n FROM v EMIT CHANGES":                                                                           "0A000",
		"CREATE SAVEPOINT sp FOR v":                                                                                 "0A000",
	} {
		if _, err := c.conns[1].Exec(ctx, q); sqlstate(err) != code {
			t.Fatalf("%s: %v, want SQLSTATE %s", q, err, code)
		}
	}

	next := 0
	write := func(conn *pgx.Conn, n int, viaCopy bool) {
		t.Helper()
		var rows []string
		for i := next; i < next+n; i++ {
			rows = append(rows, fmt.Sprintf("%d\t%d", i*7919%53, i%11-3))
		}
		next += n
		if viaCopy {
			if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(strings.Join(rows, "\n")+"\n"), "COPY stream FROM STDIN"); err != nil {
				t.Fatal(err)
			}
			return
		}
		vals := make([]string, len(rows))
		for i, r := range rows {
			vals[i] = "(" + strings.ReplaceAll(r, "\t", ", ") + ")"
		}
		execAll(t, conn, "INSERT INTO stream VALUES "+strings.Join(vals, ", "))
	}
	reads := map[string]string{
		"SELECT k, n, s FROM v":                                "SELECT k, count(*), sum(x) FROM stream GROUP BY k",
		"SELECT k, s FROM v WHERE k < 20 AND n > 1 ORDER BY k": "SELECT k, sum(x) FROM stream GROUP BY k HAVING k < 20 AND count(*) > 1 ORDER BY k",
		"SELECT count(*), sum(n), sum(s) FROM v":               "SELECT count(DISTINCT k), count(*), sum(x) FROM stream",
	}
	// settle waits until every read on each of conns equals its batch
	// query; a read may fail only with 55000 meanwhile.
	refused := 0
	settle := func(what string, idx ...int) {
		t.Helper()
		start := time.Now()
		defer func() { t.Logf("%s: exact on %v after %v", what, idx, time.Since(start).Round(time.Millisecond)) }()
		for _, i := range idx {
			for q, batch := range reads {
				var got, want []string
				var err error
				waitUntil(t, 45*time.Second, what+": "+q+" on "+c.nodes[i].id, func() bool {
					if want, err = queryRows(c.conns[i], batch); err != nil {
						t.Fatalf("%s: the batch query on %s: %v", what, c.nodes[i].id, err)
					}
					got, err = queryRows(c.conns[i], q)
					if err != nil {
						if sqlstate(err) != "55000" {
							t.Fatalf("%s: %s on %s: %v, want rows or 55000", what, q, c.nodes[i].id, err)
						}
						refused++
						return false
					}
					if !strings.Contains(q, "ORDER BY") {
						slices.Sort(got)
						slices.Sort(want)
					}
					return slices.Equal(got, want) && len(want) > 0
				})
			}
		}
	}

	write(c.conns[0], 300, false)
	write(c.conns[1], 400, true)
	write(c.conns[2], 200, false)
	settle("three nodes", 0, 1, 2)

	// COPY TO of the view runs over the gathered rows too.
	keys, err := queryRows(c.conns[1], "SELECT count(DISTINCT k) FROM stream")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, err := c.conns[1].PgConn().CopyTo(ctx, &out, "COPY v TO STDOUT"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("'%d'", strings.Count(out.String(), "\n")); got != keys[0] {
		t.Fatalf("COPY v TO STDOUT on n2: %s lines, the table has %v keys", got, keys)
	}

	// Every node runs a part of v; v_one has one owner.
	parts := map[string]bool{}
	owners := jobOwners(t, c.conns[2])
	for _, r := range showCluster(t, c.conns[2]) {
		if strings.Contains(r.jobs, "v[gen ") && strings.Contains(r.jobs, "instances ") {
			parts[r.id] = true
		}
	}
	if len(parts) != 3 || len(owners["v_one"]) != 1 || len(owners["v"]) != 0 {
		t.Fatalf("SHOW CLUSTER: parts of v on %v, owners %v; want a part on every node and one owner of v_one only", parts, owners)
	}

	// kill -9 of n2; the survivors keep inserting.
	c.nodes[1].srv.Kill9()
	write(c.conns[0], 250, true)
	write(c.conns[2], 150, false)
	settle("after kill -9 of n2", 0, 2)
	write(c.conns[2], 100, true)
	settle("more rows on two nodes", 0, 2)

	// n2 comes back and reads the same.
	c.nodes[1].srv.Restart(t)
	c.conns[1] = c.nodes[1].srv.Conn(t)
	settle("n2 restarted", 1, 0)
	// The nodes checkpoint v to the storage (what a new generation restores).
	waitUntil(t, 20*time.Second, "a snapshot of v in n1's storage", func() bool {
		ms, err := c.s3.Remote(t, c.storage+"/nodes/n1/dist/v").Manifests(ctx, "checkpoints")
		return err == nil && len(ms) > 0
	})
	// DROP stops every node's part and the view's state in etcd goes.
	execAll(t, c.conns[2], "DROP MATERIALIZED VIEW v")
	waitUntil(t, 20*time.Second, "the parts of v gone from SHOW CLUSTER", func() bool {
		for _, r := range showCluster(t, c.conns[0]) {
			if strings.Contains(r.jobs, "v[") {
				return false
			}
		}
		return true
	})
	if _, err := queryRows(c.conns[1], "SELECT * FROM v"); sqlstate(err) != "42P01" {
		t.Fatalf("SELECT from the dropped view: %v, want 42P01", err)
	}
	// Every node's snapshots of v leave the storage.
	for _, n := range c.nodes {
		rem := c.s3.Remote(t, c.storage+"/nodes/"+n.id+"/dist/v")
		waitUntil(t, 20*time.Second, "the snapshots of the dropped v gone from "+n.id+"'s storage", func() bool {
			ms, err := rem.Manifests(ctx, "checkpoints")
			return err == nil && len(ms) == 0
		})
	}
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
	t.Logf("%d rows; reads refused with 55000 while a generation started: %d", next, refused)
}
