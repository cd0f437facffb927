package sqllogic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Append-only inference (issue 31): over a stream that only inserts rows,
// a top-N keeps each partition's top rows, not every row, so its state
// stays the same size however many rows come; the view still equals its
// batch query. Over a keyed table (a changelog) the same queries keep
// every row and retract exactly.

var appendOnlyViews = map[string]string{
	// q19's shape: the three highest bids of each auction.
	"top3": `SELECT * FROM (SELECT auction, price, ts,
		ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, ts) AS rn FROM bid) AS t WHERE rn <= 3`,
	// RANK keeps the rows that tie at the bound.
	"rank2": `SELECT * FROM (SELECT auction, price,
		RANK() OVER (PARTITION BY auction ORDER BY price DESC) AS r FROM bid) AS t WHERE r <= 2`,
	// One partition, with an offset: the rows before it stay in the top.
	"page": `SELECT auction, price, ts FROM bid ORDER BY price DESC, ts LIMIT 4 OFFSET 2`,
	// q9's shape: the best bid of each auction through a join of two streams.
	"best": `SELECT * FROM (SELECT a.id, a.seller, b.price, b.ts,
		ROW_NUMBER() OVER (PARTITION BY a.id ORDER BY b.price DESC, b.ts) AS rn
		FROM auction a JOIN bid b ON a.id = b.auction) AS t WHERE rn <= 1`,
	"extremes": `SELECT auction, min(price), max(price), count(*) FROM bid GROUP BY auction`,
	// Many ties at the bound: RANK and DENSE_RANK keep every tied row (this
	// state grows with its output, so only its rows are checked).
	"ties": `SELECT * FROM (SELECT auction, price, price % 40 AS p,
		RANK() OVER (PARTITION BY auction ORDER BY price % 40 DESC) AS r,
		DENSE_RANK() OVER (PARTITION BY auction ORDER BY price % 40 DESC) AS d FROM bid) AS t WHERE d <= 2`,
}

func TestAppendOnlyTopNBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a volume test (the -race step's budget); run in the plain test step")
	}
	srv := StartServer(t, t.TempDir())
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c,
		"CREATE TABLE bid (auction BIGINT, price BIGINT, ts TIMESTAMP)",
		"CREATE TABLE auction (id BIGINT, seller BIGINT)")
	for i := 0; i < 10; i++ {
		execAll(t, c, fmt.Sprintf("INSERT INTO auction VALUES (%d, %d)", i, 100+i))
	}
	for name, q := range appendOnlyViews {
		execAll(t, c, "CREATE MATERIALIZED VIEW "+name+" AS "+q)
	}
	// EXPLAIN marks what reads an append-only input.
	for _, q := range []string{appendOnlyViews["top3"], appendOnlyViews["best"], appendOnlyViews["extremes"]} {
		if plan := rowSet(t, c, "EXPLAIN "+q); !strings.Contains(plan, "input=append-only") {
			t.Fatalf("EXPLAIN does not mark the append-only input:\n%s", plan)
		}
	}
	if plan := rowSet(t, c, "EXPLAIN "+appendOnlyViews["best"]); !strings.Contains(plan, "append-only=left,right") {
		t.Fatalf("EXPLAIN does not mark the join's append-only sides:\n%s", plan)
	}
	stateBytes := func(v string) int64 {
		var n int64
		if err := c.QueryRow(ctx, "SELECT state_bytes FROM streamdb_jobs WHERE name = $1", v).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	r := rand.New(rand.NewPCG(31, 7))
	first := map[string]int64{}
	for round := 0; round < 40; round++ {
		var b strings.Builder
		for i := 0; i < 500; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "(%d, %d, '2026-01-01 00:00:00'::timestamp + INTERVAL '%d' SECOND)",
				r.IntN(10), r.IntN(100000), round*500+i)
		}
		execAll(t, c, "INSERT INTO bid VALUES "+b.String())
		if round == 25 {
			// The pruned state is what a restart reads back.
			execAll(t, c, "CHECKPOINT")
			srv.Kill9()
			srv.Restart(t)
			c = srv.Conn(t)
		}
		if round%10 != 9 {
			continue
		}
		execAll(t, c, "CHECKPOINT")
		for name, q := range appendOnlyViews {
			if got, want := rowSet(t, c, "SELECT * FROM "+name), rowSet(t, c, q); got != want {
				t.Fatalf("round %d: %s differs from its batch query:\n%s\nwant\n%s", round, name, got, want)
			}
		}
		for _, name := range []string{"top3", "rank2", "page"} {
			n := stateBytes(name)
			t.Logf("after %d bids: %s holds %d bytes", (round+1)*500, name, n)
			if first[name] == 0 {
				first[name] = n
			} else if n > first[name]*3/2 {
				t.Errorf("after %d bids %s holds %d bytes, %d after 5000: its state grows with its append-only input", (round+1)*500, name, n, first[name])
			}
		}
	}
}

// TestAppendOnlyTopNRetracts: the same top-N over a keyed table (a
// changelog: UPDATE and DELETE retract) keeps what a retraction needs; the
// view equals its batch query as rows of the top go and come.
func TestAppendOnlyTopNRetracts(t *testing.T) {
	srv := StartServer(t, t.TempDir())
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE kbid (id BIGINT PRIMARY KEY, auction BIGINT, price BIGINT)")
	views := map[string]string{
		"ktop2": `SELECT * FROM (SELECT id, auction, price,
			ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, id) AS rn FROM kbid) AS t WHERE rn <= 2`,
		"kpage":     `SELECT id, price FROM kbid ORDER BY price DESC, id LIMIT 3`,
		"kextremes": `SELECT auction, min(price), max(price) FROM kbid GROUP BY auction`,
	}
	for name, q := range views {
		execAll(t, c, "CREATE MATERIALIZED VIEW "+name+" AS "+q)
		if plan := rowSet(t, c, "EXPLAIN "+q); strings.Contains(plan, "append-only") {
			t.Fatalf("EXPLAIN marks a keyed table's rows append-only:\n%s", plan)
		}
	}
	r := rand.New(rand.NewPCG(31, 8))
	for i := 0; i < 300; i++ {
		execAll(t, c, fmt.Sprintf("INSERT INTO kbid VALUES (%d, %d, %d)", i, r.IntN(5), r.IntN(1000)))
	}
	for round := 0; round < 6; round++ {
		// Delete the current best rows, lower others: the next ones move up.
		rows, err := c.Query(context.Background(), "SELECT id FROM ktop2 WHERE rn = 1")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, fmt.Sprint(id))
		}
		if rows.Close(); rows.Err() != nil || len(ids) == 0 {
			t.Fatalf("round %d: ids of ktop2: %v (%d)", round, rows.Err(), len(ids))
		}
		execAll(t, c,
			"DELETE FROM kbid WHERE id IN ("+strings.Join(ids, ", ")+")",
			fmt.Sprintf("UPDATE kbid SET price = price - 500 WHERE id %% 7 = %d", round),
			"CHECKPOINT")
		for name, q := range views {
			if got, want := rowSet(t, c, "SELECT * FROM "+name), rowSet(t, c, q); got != want {
				t.Fatalf("round %d: %s differs from its batch query:\n%s\nwant\n%s", round, name, got, want)
			}
		}
	}
}

// TestAppendOnlyTopNClockStored: with state.ttl, a row that does not enter
// its partition's top (so the pruned state does not keep it) still
// restarts the partition's idle clock, and the clock is stored: after a
// kill -9 the partition is not expired by the clock of its older rows.
func TestAppendOnlyTopNClockStored(t *testing.T) {
	srv := StartServer(t, t.TempDir())
	c := srv.Conn(t)
	q := `SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) AS x WHERE rn <= 1`
	execAll(t, c, "CREATE TABLE t (k BIGINT, v BIGINT) APPEND ONLY",
		"CREATE MATERIALIZED VIEW top AS "+q+" WITH (state.ttl = '8s')",
		"INSERT INTO t VALUES (1, 10)", "CHECKPOINT")
	t0 := time.Now()
	time.Sleep(5 * time.Second)
	execAll(t, c, "INSERT INTO t VALUES (1, 3)", "CHECKPOINT") // below the top: dropped, but it touched key 1
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	if d := time.Until(t0.Add(10 * time.Second)); d > 0 {
		time.Sleep(d)
	}
	if time.Since(t0) > 12*time.Second {
		t.Skipf("the restart took until %s after the first row: the test cannot tell the clocks apart", time.Since(t0))
	}
	// 10 s after key 1's first row, 5 s after its last: not expired, so a
	// row below its top changes nothing (expired, it would be a new top).
	execAll(t, c, "CHECKPOINT", "INSERT INTO t VALUES (1, 2)", "CHECKPOINT")
	if got, want := rowSet(t, c, "SELECT * FROM top"), rowSet(t, c, q); got != want || got != "1|10" {
		t.Fatalf("top = %q, batch %q: key 1's partition expired by the clock of its first row", got, want)
	}
}
