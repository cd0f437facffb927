package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The versioned join's oracle: PostgreSQL 15 keeps every version of the
// rates (vr_hist, one row per upsert streamdb's keyed table vr was given)
// and picks, per order, the latest at or before its time with a LATERAL
// subquery (ties: the later write, seq).

var versionedPGDDL = []string{
	"CREATE TABLE vo (id BIGINT, cur VARCHAR, amt BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
	"CREATE TABLE vr (cur VARCHAR PRIMARY KEY, rate BIGINT, ts TIMESTAMP, seq BIGINT, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
}

var versionedPGOracle = []string{
	"CREATE TABLE vo (id BIGINT, cur VARCHAR, amt BIGINT, ts TIMESTAMP)",
	"CREATE TABLE vr_hist (cur VARCHAR, rate BIGINT, ts TIMESTAMP, seq BIGINT)",
}

// versionedPGCases: the view (streamdb) and the oracle (PostgreSQL).
var versionedPGCases = []struct{ sdb, pg string }{
	{`SELECT o.id, o.cur, o.amt * r.rate AS conv, r.ts AS rts, r.seq FROM vo o
	    JOIN vr FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur`,
		`SELECT o.id, o.cur, o.amt * r.rate AS conv, r.ts AS rts, r.seq FROM vo o
	    JOIN LATERAL (SELECT * FROM vr_hist h WHERE h.cur = o.cur AND h.ts <= o.ts ORDER BY h.ts DESC, h.seq DESC LIMIT 1) r ON true`},
	{`SELECT o.id, r.rate, r.seq FROM vo o
	    LEFT JOIN vr FOR SYSTEM_TIME AS OF o.ts r ON r.cur = o.cur WHERE o.amt > 2`,
		`SELECT o.id, r.rate, r.seq FROM vo o
	    LEFT JOIN LATERAL (SELECT * FROM vr_hist h WHERE h.cur = o.cur AND h.ts <= o.ts ORDER BY h.ts DESC, h.seq DESC LIMIT 1) r ON true WHERE o.amt > 2`},
}

// versionedGen makes the writes: orders and rate versions whose times go
// forward but come up to 4 s out of order (within the 5 s watermark
// delay, so none is late). Each write is one statement for streamdb and
// its oracle form for PostgreSQL; check tells, after a crash, whether it
// is in streamdb.
type versionedGen struct {
	rng     *rand.Rand
	now     time.Time
	id, seq int
}

type versionedWrite struct{ sdb, pg, check string }

func (g *versionedGen) next() versionedWrite {
	g.now = g.now.Add(time.Duration(g.rng.IntN(3)) * time.Second)
	ts := g.now.Add(-time.Duration(g.rng.IntN(5)) * time.Second).Format("2006-01-02 15:04:05")
	if g.rng.IntN(2) == 0 {
		g.id++
		cur := []string{"A", "B", "C", "D"}[g.rng.IntN(4)] // D has no versions
		s := fmt.Sprintf("INSERT INTO vo VALUES (%d, '%s', %d, '%s')", g.id, cur, g.rng.IntN(10), ts)
		return versionedWrite{s, s, fmt.Sprintf("SELECT count(*) FROM vo WHERE id = %d", g.id)}
	}
	g.seq++
	cur := []string{"A", "B", "C"}[g.rng.IntN(3)]
	rate := 1 + g.rng.IntN(9)
	return versionedWrite{
		fmt.Sprintf("INSERT INTO vr VALUES ('%s', %d, '%s', %d) ON CONFLICT (cur) DO UPDATE SET rate = EXCLUDED.rate, ts = EXCLUDED.ts, seq = EXCLUDED.seq", cur, rate, ts, g.seq),
		fmt.Sprintf("INSERT INTO vr_hist VALUES ('%s', %d, '%s', %d)", cur, rate, ts, g.seq),
		fmt.Sprintf("SELECT count(*) FROM vr WHERE seq = %d", g.seq),
	}
}

// versionedFinish moves both watermarks past every order (rows of a
// currency and an id the cases leave out) and checks every view, and its
// batch query, against PostgreSQL.
func versionedFinish(t *testing.T, sdb, pgc *pgx.Conn, when string) {
	t.Helper()
	lookupExec(t, sdb,
		"INSERT INTO vo VALUES (1000000, 'Z', 0, '2030-01-01 00:00:00')",
		"INSERT INTO vr VALUES ('Z', 1, '2030-01-01 00:00:00', 0)",
		"CHECKPOINT")
	for i, c := range versionedPGCases {
		want, err := queryRows(pgc, c.pg)
		if err != nil {
			t.Fatalf("PostgreSQL: %s: %v", c.pg, err)
		}
		got, err := queryRows(sdb, fmt.Sprintf("SELECT * FROM vj%d WHERE id < 1000000", i))
		if err != nil {
			t.Fatal(err)
		}
		if diff := diffRows(got, want); diff != "" {
			t.Fatalf("%s: view vj%d differs from PostgreSQL:\n%s", when, i, diff)
		}
		if got, err = queryRows(sdb, "SELECT * FROM ("+c.sdb+") q WHERE id < 1000000"); err != nil {
			t.Fatal(err)
		}
		if diff := diffRows(got, want); diff != "" {
			t.Fatalf("%s: batch query %d differs from PostgreSQL:\n%s", when, i, diff)
		}
		if len(want) < 20 {
			t.Errorf("case %d has %d rows: the generator should fill it", i, len(want))
		}
	}
}

// versionedSetup creates the tables on both and the views on streamdb,
// with state on backend.
func versionedSetup(t *testing.T, sdb, pgc *pgx.Conn, backend string) {
	lookupExec(t, sdb, versionedPGDDL...)
	lookupExec(t, pgc, versionedPGOracle...)
	for i, c := range versionedPGCases {
		lookupExec(t, sdb, fmt.Sprintf("CREATE MATERIALIZED VIEW vj%d WITH (state.backend = '%s') AS %s", i, backend, c.sdb))
	}
}

// TestVersionedJoinPG: random orders and out-of-order rate versions; at
// checkpoints every view row must already be in PostgreSQL's answer
// (rows are final), and once the watermarks passed every order the views
// and the batch queries equal it.
func TestVersionedJoinPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	versionedSetup(t, sdb, pgc, "pebble")
	g := &versionedGen{rng: rand.New(rand.NewPCG(33, 2)), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for step := 0; step < 240; step++ {
		w := g.next()
		lookupExec(t, sdb, w.sdb)
		lookupExec(t, pgc, w.pg)
		if step%40 != 39 {
			continue
		}
		lookupExec(t, sdb, "CHECKPOINT")
		for i, c := range versionedPGCases {
			want, err := queryRows(pgc, c.pg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := queryRows(sdb, fmt.Sprintf("SELECT * FROM vj%d", i))
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]int{}
			for _, r := range want {
				have[r]++
			}
			for _, r := range got {
				if have[r] == 0 {
					t.Fatalf("step %d: view vj%d has %s, which PostgreSQL's answer has not (or fewer times)", step, i, r)
				}
				have[r]--
			}
		}
	}
	versionedFinish(t, sdb, pgc, "end")
}

// TestVersionedJoinKill9 streams the writes with CHECKPOINTs among them
// and kill -9s the server mid-stream, three times; after the restarts the
// views equal PostgreSQL's answer over what streamdb made durable:
// exactly once across the crashes, with the join's state written per
// epoch (pebble) or snapshotted at checkpoints (memory).
func TestVersionedJoinKill9(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"pebble", "memory"} {
		t.Run(backend, func(t *testing.T) { versionedKill9(t, backend) })
	}
}

func versionedKill9(t *testing.T, backend string) {
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	versionedSetup(t, sdb, pgc, backend)
	g := &versionedGen{rng: rand.New(rand.NewPCG(33, 9)), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for round := 0; round < 3; round++ {
		ws := make([]versionedWrite, 4000)
		for i := range ws {
			if i%30 == 29 {
				ws[i] = versionedWrite{sdb: "CHECKPOINT"}
				continue
			}
			ws[i] = g.next()
		}
		type result struct {
			acked    int
			inflight *versionedWrite
		}
		done := make(chan result, 1)
		go func(c *pgx.Conn) {
			var r result
			for i := range ws {
				err := keyedExec(c, ws[i].sdb)
				var pe *pgconn.PgError
				if err != nil && !errors.As(err, &pe) {
					r.inflight = &ws[i]
					break
				}
				r.acked++
			}
			done <- r
		}(sdb)
		time.Sleep(time.Duration(300+g.rng.IntN(700)) * time.Millisecond)
		srv.Kill9()
		r := <-done
		if r.inflight == nil {
			t.Fatalf("round %d: every write ran before the kill", round)
		}
		for _, w := range ws[:r.acked] {
			if w.pg != "" {
				lookupExec(t, pgc, w.pg)
			}
		}
		srv.Restart(t)
		sdb = srv.Conn(t)
		if w := r.inflight; w.pg != "" {
			var n int64
			if err := sdb.QueryRow(context.Background(), w.check).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				lookupExec(t, pgc, w.pg)
			}
		}
		// The writes not made go again (the generator moved on).
		t.Logf("round %d: %d writes acknowledged before the kill", round, r.acked)
	}
	versionedFinish(t, sdb, pgc, "after three kill -9s")
}
