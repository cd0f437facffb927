package cluster

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// copyOutLines runs a COPY ... TO STDOUT and returns its lines, sorted.
func copyOutLines(c *pgx.Conn, q string) ([]string, error) {
	var b bytes.Buffer
	if _, err := c.PgConn().CopyTo(context.Background(), &b, q); err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if b.Len() == 0 {
		lines = nil
	}
	sort.Strings(lines)
	return lines, nil
}

// TestClusterSurface: three nodes with --cluster-kafka. What cluster mode
// refused with 0A000 and now answers for the cluster, each against an
// oracle (a single-node server fed the acknowledged rows, or the ledger):
//   - BEGIN ... COMMIT of INSERTs into two tables on any node is one Kafka
//     transaction: after COMMIT both tables hold the rows, after ROLLBACK
//     neither does; an INSERT with parameters (the extended protocol's
//     implicit transaction, which before wrote to the node's own log and
//     was never seen) and a pgx batch of INSERTs reach the topic too;
//   - INSERT ... SELECT from a table (its topic, up to the committed end)
//     on any node, and from a materialized view on its owner and on
//     another node (the statement is sent to the owner);
//   - COPY ... TO STDOUT of a table, of a view and of a query over a view
//     on every node (forwarded to the view's owner), in text and binary;
//   - a plain view over a table, read directly and as the input of a
//     materialized view.
//
// A materialized view over another materialized view stays refused.
func TestClusterSurface(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three-node cluster with Kafka")
	}
	ctx := context.Background()
	const perChannel = "SELECT channel, count(*) AS n, sum(price) AS s FROM bids GROUP BY channel"
	nodes, conns := startKafkaCluster(t, "surface", bidsTable,
		"CREATE TABLE audit (id BIGINT, channel VARCHAR, price BIGINT, ts TIMESTAMP, note TEXT)",
		"CREATE TABLE totals (channel VARCHAR, n BIGINT, s BIGINT)",
		"CREATE VIEW cheap AS SELECT id, channel, price FROM bids WHERE price < 50",
		"CREATE MATERIALIZED VIEW per_channel WITH (distributed = false) AS "+perChannel,
		"CREATE MATERIALIZED VIEW cheap_count WITH (distributed = false) AS SELECT channel, count(*) AS n FROM cheap GROUP BY channel",
		"CREATE MATERIALIZED VIEW over_view AS SELECT sum(n) AS n FROM per_channel")
	led := &streamLedger{}
	auditLed := &streamLedger{}
	next := 0
	take := func(n int) []string {
		rows := ledgerRows(next, n)
		next += n
		return rows
	}

	// A transaction block over two tables on node 2, committed.
	c2 := conns[1]
	a, b := take(30), take(20)
	execAll(t, c2, "BEGIN")
	execAll(t, c2, insertSQL(a))
	execAll(t, c2, strings.Replace(insertSQL(b), "INTO bids", "INTO audit", 1))
	execAll(t, c2, insertSQL(b))
	execAll(t, c2, "COMMIT")
	led.add(a)
	led.add(b)
	auditLed.add(b)
	// Rolled back: nothing reaches the topics.
	execAll(t, c2, "BEGIN")
	execAll(t, c2, insertSQL(ledgerRows(1_000_000, 10)))
	execAll(t, c2, "ROLLBACK")
	// Parameters (the extended protocol) on node 3.
	for _, r := range take(5) {
		f := strings.Split(r, "\t")
		var note any
		if f[4] != `\N` {
			note = strings.ReplaceAll(f[4], `\\`, `\`)
		}
		if _, err := conns[2].Exec(ctx, "INSERT INTO bids VALUES ($1::bigint, $2, $3::bigint, $4::timestamp, $5)", f[0], f[1], f[2], f[3], note); err != nil {
			t.Fatalf("INSERT with parameters: %v", err)
		}
		led.add([]string{r})
	}
	// A pgx batch of two INSERTs on node 1 (one implicit transaction).
	b1, b2 := take(7), take(8)
	batch := &pgx.Batch{}
	batch.Queue(insertSQL(b1))
	batch.Queue(insertSQL(b2))
	if err := conns[0].SendBatch(ctx, batch).Close(); err != nil {
		t.Fatalf("batch: %v", err)
	}
	led.add(b1)
	led.add(b2)

	// The oracle: a single-node server fed the ledger's rows, its answers
	// as COPY lines.
	oracle := func(lines []string, queries ...string) [][]string {
		t.Helper()
		single := StartServer(t, "", "--http", "")
		defer single.Stop()
		sc := single.Conn(t)
		execAll(t, sc, bidsTable, "CREATE VIEW cheap AS SELECT id, channel, price FROM bids WHERE price < 50")
		if _, err := sc.PgConn().CopyFrom(ctx, strings.NewReader(strings.Join(lines, "\n")+"\n"), "COPY bids FROM STDIN"); err != nil {
			t.Fatal(err)
		}
		var out [][]string
		for _, q := range queries {
			got, err := copyOutLines(sc, "COPY ("+q+") TO STDOUT")
			if err != nil {
				t.Fatalf("oracle %s: %v", q, err)
			}
			out = append(out, got)
		}
		return out
	}
	const cheapCount = "SELECT channel, count(*) FROM cheap GROUP BY channel"
	want := oracle(led.all(), perChannel, cheapCount, "SELECT * FROM bids", "SELECT * FROM cheap", "SELECT channel, sum(price) FROM bids GROUP BY channel")
	wantAudit := oracle(auditLed.all(), "SELECT * FROM bids")[0]
	eventually := func(i int, q string, want []string) {
		t.Helper()
		var got []string
		var err error
		waitUntil(t, 60*time.Second, fmt.Sprintf("%s on %s to equal the oracle", q, nodes[i].id), func() bool {
			got, err = copyOutLines(conns[i], q)
			return err == nil && strings.Join(got, "\n") == strings.Join(want, "\n")
		})
	}
	for i := range nodes {
		eventually(i, "COPY per_channel TO STDOUT", want[0])
		eventually(i, "COPY cheap_count TO STDOUT", want[1])
	}
	// COPY TO of the tables (their topics), a plain view and the views,
	// and SELECT, on every node.
	for i := range nodes {
		for q, want := range map[string][]string{
			"COPY bids TO STDOUT":                                 want[2],
			"COPY audit TO STDOUT":                                wantAudit,
			"COPY cheap TO STDOUT":                                want[3],
			"COPY (SELECT channel, n FROM cheap_count) TO STDOUT": want[1],
			"COPY (SELECT channel, s FROM per_channel) TO STDOUT": want[4],
		} {
			got, err := copyOutLines(conns[i], q)
			if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s on %s: %v (%d lines), want %d lines %.300v", q, nodes[i].id, err, len(got), len(want), want)
			}
		}
		got, err := clusterRows(conns[i], "SELECT * FROM per_channel")
		if err != nil || len(got) != len(want[0]) {
			t.Fatalf("SELECT * FROM per_channel on %s: %v %v", nodes[i].id, got, err)
		}
		var bin bytes.Buffer
		if _, err := conns[i].PgConn().CopyTo(ctx, &bin, "COPY per_channel TO STDOUT (FORMAT binary)"); err != nil || !bytes.HasPrefix(bin.Bytes(), []byte("PGCOPY\n")) {
			t.Fatalf("binary COPY of per_channel on %s: %v %q", nodes[i].id, err, bin.Bytes())
		}
	}

	// INSERT ... SELECT from a table on node 3: audit gets the cheap bids.
	if _, err := conns[2].Exec(ctx, "INSERT INTO audit SELECT * FROM bids WHERE price < 50"); err != nil {
		t.Fatalf("INSERT ... SELECT from bids: %v", err)
	}
	for _, r := range led.all() {
		var price int
		fmt.Sscan(strings.Split(r, "\t")[2], &price)
		if price < 50 {
			auditLed.add([]string{r})
		}
	}
	wantAudit = oracle(auditLed.all(), "SELECT * FROM bids")[0]
	if got, err := copyOutLines(conns[0], "COPY audit TO STDOUT"); err != nil || strings.Join(got, "\n") != strings.Join(wantAudit, "\n") {
		t.Fatalf("audit after INSERT ... SELECT: %v %d lines, want %d", err, len(got), len(wantAudit))
	}
	// INSERT ... SELECT from a view, on its owner and on another node.
	o := jobOwners(t, conns[0])
	owner := o["per_channel"][0]
	for i, nd := range nodes {
		if _, err := conns[i].Exec(ctx, "INSERT INTO totals SELECT channel, n, s FROM per_channel"); err != nil {
			t.Fatalf("INSERT ... SELECT from per_channel on %s (owner %s): %v", nd.id, owner, err)
		}
	}
	var wantTotals []string
	for _, l := range want[0] {
		for range nodes {
			wantTotals = append(wantTotals, l)
		}
	}
	sort.Strings(wantTotals)
	if got, err := copyOutLines(conns[1], "COPY totals TO STDOUT"); err != nil || strings.Join(got, "\n") != strings.Join(wantTotals, "\n") {
		t.Fatalf("totals: %v %v, want %v", err, got, wantTotals)
	}
	// Inside a transaction block an INSERT ... SELECT from a view run
	// elsewhere would commit apart from it: refused.
	other := conns[0]
	for i, nd := range nodes {
		if nd.id != owner {
			other = conns[i]
		}
	}
	execAll(t, other, "BEGIN")
	if _, err := other.Exec(ctx, "INSERT INTO totals SELECT channel, n, s FROM per_channel"); sqlstate(err) != "0A000" {
		t.Fatalf("INSERT ... SELECT from a view run elsewhere inside BEGIN: %v, want 0A000", err)
	}
	execAll(t, other, "ROLLBACK")

	// Still refused: a view over a view (its input's changelog is on the
	// node that runs the input).
	for _, q := range []string{"SELECT * FROM over_view", "COPY over_view TO STDOUT"} {
		if _, err := conns[2].Exec(ctx, q); sqlstate(err) != "0A000" {
			t.Errorf("%s: %v, want 0A000", q, err)
		}
	}
}
