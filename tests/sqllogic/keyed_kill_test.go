package sqllogic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// keyedAck is a statement streamdb answered: its error text ("" for none).
type keyedAck struct{ sql, err string }

// TestKeyedTableKill9 writes random INSERT/upsert/UPDATE/DELETE statements
// to tables with a primary key (with CHECKPOINTs among them) and kill -9s
// the server at a random moment, four times. PostgreSQL 15 is the oracle:
// it runs every statement streamdb acknowledged (each must end the same
// way on both), and the statement in flight at the kill only if streamdb's
// table shows it was made durable. After each restart the tables and the
// views of keyedViews must equal PostgreSQL's: nothing acknowledged lost,
// nothing applied twice, every retraction kept.
func TestKeyedTableKill9(t *testing.T) {
	t.Parallel()
	_, srv, sdb, pgc := keyedSetup(t)
	rng := rand.New(rand.NewPCG(30, 9))
	total := 0
	for round := 0; round < 4; round++ {
		stmts := make([]string, 2000)
		for i := range stmts {
			if i%15 == 14 {
				stmts[i] = "CHECKPOINT"
				continue
			}
			stmts[i] = keyedStmt(rng)
		}
		type result struct {
			acked    []keyedAck
			inflight string
		}
		done := make(chan result, 1)
		go func(c *pgx.Conn) {
			var r result
			for _, s := range stmts {
				err := keyedExec(c, s)
				var pe *pgconn.PgError
				if err != nil && !errors.As(err, &pe) {
					r.inflight = s // the connection died with the server
					break
				}
				r.acked = append(r.acked, keyedAck{s, errText(err)})
			}
			done <- r
		}(sdb)
		time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
		srv.Kill9()
		r := <-done
		if r.inflight == "" {
			t.Fatalf("round %d: all %d statements ran before the kill; the kill must land mid-stream", round, len(stmts))
		}
		total += len(r.acked)
		for _, a := range r.acked {
			if a.sql == "CHECKPOINT" {
				continue
			}
			if got := errText(keyedExec(pgc, a.sql)); got != a.err {
				t.Fatalf("round %d: %s\n  streamdb:   %q\n  PostgreSQL: %q", round, a.sql, a.err, got)
			}
		}
		srv.Restart(t)
		sdb = srv.Conn(t)
		if r.inflight != "CHECKPOINT" && keyedTablesDiffer(t, sdb, pgc) {
			// The statement in flight was made durable before the kill.
			if err := keyedExec(pgc, r.inflight); err != nil {
				t.Fatalf("round %d: the tables differ from PostgreSQL's and the statement in flight (%s) fails there: %v", round, r.inflight, err)
			}
		}
		keyedCompare(t, sdb, pgc, fmt.Sprintf("round %d: after kill -9 (in flight: %s)", round, r.inflight))
		t.Logf("round %d: %d statements acknowledged, killed during %s", round, len(r.acked), r.inflight)
	}
	if total < 20 {
		t.Errorf("only %d statements acknowledged over all rounds: too few to test anything", total)
	}
}

// keyedTablesDiffer reports whether kt or dim differ between the two.
func keyedTablesDiffer(t *testing.T, sdb, pgc *pgx.Conn) bool {
	for _, tbl := range []string{"kt", "dim"} {
		if diffWithPG(t, sdb, pgc, "SELECT * FROM "+tbl) != "" {
			return true
		}
	}
	return false
}
