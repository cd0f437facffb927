package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// streamLedger is the rows the cluster acknowledged, as COPY text lines.
type streamLedger struct {
	mu    sync.Mutex
	lines []string
}

func (l *streamLedger) add(rows []string) {
	l.mu.Lock()
	l.lines = append(l.lines, rows...)
	l.mu.Unlock()
}

func (l *streamLedger) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// ledgerRows makes n rows of bids starting at id from: channel, price,
// time and a note with characters JSON escapes (quote, backslash, tab in
// COPY's escaped form, non-ASCII), and a NULL note every 7th row.
func ledgerRows(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		id := from + i
		note := fmt.Sprintf(`say "hi" \\ %d é`, id%5)
		if id%7 == 0 {
			note = `\N`
		}
		out[i] = fmt.Sprintf("%d\tch%d\t%d\t2026-12-06 10:%02d:%02d.%03d\t%s", id, id%4, id%97+1, id/60%60, id%60, id%1000, note)
	}
	return out
}

// insertSQL is an INSERT of rows (ledgerRows' lines).
func insertSQL(rows []string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO bids VALUES ")
	for i, r := range rows {
		f := strings.Split(r, "\t")
		note := "NULL"
		if f[4] != `\N` {
			note = "'" + strings.ReplaceAll(strings.ReplaceAll(f[4], `\\`, `\`), "'", "''") + "'"
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%s, '%s', %s, '%s', %s)", f[0], f[1], f[2], f[3], note)
	}
	return b.String()
}

// TestClusterStreamLog: three nodes on embedded etcd and an in-process Kafka
// (kfake), started with --cluster-kafka. A table's rows go to its topic:
// INSERT on node 1 and COPY on node 2 into the same table, each
// acknowledged statement's rows kept in a ledger. A GROUP BY view over the
// table runs on one node; read from node 3 (forwarded to the owner) it
// equals the batch query over the ledger's rows on a single-node server,
// and a read of the table itself on node 3 (the topic up to its committed
// end) holds exactly the ledger's rows. Then kill -9 of the view's owner
// while a writer on another node keeps writing: the survivor that takes
// the view over reads the topic from its start, and once the writers stop
// the view equals the batch query over every acknowledged row, each once.
func TestClusterStreamLog(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three-node load and failover scenario")
	}
	ctx := context.Background()
	const batch = "SELECT channel, count(*), sum(price), max(ts), count(note), max(note) FROM bids GROUP BY channel"
	nodes, conns := startKafkaCluster(t, "slog", bidsTable,
		"CREATE MATERIALIZED VIEW per_channel WITH (distributed = false) AS SELECT channel, count(*) AS n, sum(price) AS s, max(ts) AS last, count(note) AS notes, max(note) AS top FROM bids GROUP BY channel",
		"CREATE TABLE keyed (k BIGINT PRIMARY KEY, v BIGINT)")

	led := &streamLedger{}
	next := 0
	var nextMu sync.Mutex
	take := func(n int) int {
		nextMu.Lock()
		defer nextMu.Unlock()
		from := next
		next += n
		return from
	}
	insert := func(c *pgx.Conn, n int) error {
		rows := ledgerRows(take(n), n)
		if _, err := c.Exec(ctx, insertSQL(rows)); err != nil {
			return err
		}
		led.add(rows)
		return nil
	}
	copyIn := func(c *pgx.Conn, n int) error {
		rows := ledgerRows(take(n), n)
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(strings.Join(rows, "\n")+"\n"), "COPY bids FROM STDIN"); err != nil {
			return err
		}
		led.add(rows)
		return nil
	}
	for i := 0; i < 5; i++ {
		if err := insert(conns[0], 40); err != nil {
			t.Fatalf("INSERT on n1: %v", err)
		}
		if err := copyIn(conns[1], 500); err != nil {
			t.Fatalf("COPY on n2: %v", err)
		}
	}

	// The oracle: a single-node server fed the ledger's rows.
	ledgerOracle := func() []string { return oracle(t, []string{bidsTable}, led.all(), batch)[0] }
	readView := func(i int, want []string, what string) {
		t.Helper()
		var got []string
		var err error
		var logged time.Time
		waitUntil(t, 60*time.Second, fmt.Sprintf("%s: per_channel on %s to equal the batch query over the ledger", what, nodes[i].id), func() bool {
			got, err = clusterRows(conns[i], "SELECT * FROM per_channel")
			ok := err == nil && strings.Join(got, "\n") == strings.Join(want, "\n")
			if !ok && time.Since(logged) > 5*time.Second {
				logged = time.Now()
				t.Logf("%s on %s: %v %v; want %v", what, nodes[i].id, got, err, want)
			}
			return ok
		})
	}
	want := ledgerOracle()
	readView(2, want, "before the kill")
	// The batch query over the table on node 3 reads the topic.
	if got, err := clusterRows(conns[2], batch); err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s on n3: %v %v, want %v", batch, got, err, want)
	}
	count := func(i int) string {
		t.Helper()
		got, err := queryRows(conns[i], "SELECT count(*), count(DISTINCT id) FROM bids")
		if err != nil || len(got) != 1 {
			t.Fatalf("count(*) of bids on %s: %v %v", nodes[i].id, got, err)
		}
		return got[0]
	}
	if got, want := count(2), fmt.Sprintf("'%d' | '%d'", len(led.all()), len(led.all())); got != want {
		t.Fatalf("count(*), count(DISTINCT id) of bids on n3: %s, want %s", got, want)
	}

	// What has no shared log stays refused.
	rc := nodes[2].srv.Conn(t)
	for _, q := range []string{"INSERT INTO keyed VALUES (1, 2)", "SELECT * FROM keyed", "COPY keyed TO STDOUT"} {
		if _, err := rc.Exec(ctx, q); sqlstate(err) != "0A000" {
			t.Errorf("%s: %v, want 0A000", q, err)
		}
	}
	rc.Close(ctx)

	// kill -9 of the owner while a writer on another node writes on.
	o := jobOwners(t, conns[2])
	if len(o["per_channel"]) != 1 {
		t.Fatalf("per_channel runs on %v, want one node", o["per_channel"])
	}
	owner := o["per_channel"][0]
	k := -1
	for i, nd := range nodes {
		if nd.id == owner {
			k = i
		}
	}
	var live []int
	for i := range nodes {
		if i != k {
			live = append(live, i)
		}
	}
	// The writers have connections of their own.
	wconns := map[int]*pgx.Conn{}
	for _, i := range live {
		wconns[i] = nodes[i].srv.Conn(t)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var werrMu sync.Mutex
	var werr error
	writer := func(i int, w func(*pgx.Conn, int) error, size int) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := w(wconns[i], size); err != nil {
				werrMu.Lock()
				werr = fmt.Errorf("writer on %s: %w", nodes[i].id, err)
				werrMu.Unlock()
				return
			}
		}
	}
	wg.Add(2)
	go writer(live[0], insert, 25)
	go writer(live[1], copyIn, 300)
	time.Sleep(500 * time.Millisecond)
	nodes[k].srv.Kill9()
	waitUntil(t, 30*time.Second, "per_channel reassigned to a live node", func() bool {
		o := jobOwners(t, conns[live[0]])
		return len(o["per_channel"]) == 1 && o["per_channel"][0] != owner
	})
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	want = ledgerOracle()
	for _, i := range live {
		readView(i, want, "after kill -9 of "+owner)
	}
	if got, want := count(live[0]), fmt.Sprintf("'%d' | '%d'", len(led.all()), len(led.all())); got != want {
		t.Fatalf("count(*), count(DISTINCT id) of bids after the kill: %s, want %s", got, want)
	}
	t.Logf("%d acknowledged rows; per_channel moved from %s and equals the batch query over them", len(led.all()), owner)
}
