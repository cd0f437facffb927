package sqllogic

import (
	"context"
	"testing"
	"time"
)

// state.ttl (issue 12): idle keys of a join expire by processing time; the
// view's rows that came from them stay; per view (WITH, ALTER) or
// database-wide (SET), changed while the job runs.

func TestStateTTLExpiresJoinKeys(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	ctx := context.Background()
	execAll(t, c,
		"CREATE TABLE a (k BIGINT, x TEXT)",
		"CREATE TABLE b (k BIGINT, y TEXT)",
		"CREATE MATERIALIZED VIEW j AS SELECT a.k, x, y FROM a JOIN b ON a.k = b.k WITH (state.ttl = '2s')",
		"CREATE MATERIALIZED VIEW j_all AS SELECT a.k, x, y FROM a JOIN b ON a.k = b.k",
		"INSERT INTO a VALUES (1, 'a1'), (2, 'a2')",
		"INSERT INTO b VALUES (1, 'b1')",
		"CHECKPOINT")
	for _, v := range []string{"j", "j_all"} {
		if got := rowSet(t, c, "SELECT * FROM "+v); got != "1|a1|b1" {
			t.Fatalf("%s = %q, want the pair of key 1", v, got)
		}
	}
	// Both keys idle past j's TTL: a barrier after that (CHECKPOINT runs
	// one) expires them in j only. Waiting is the point here: expiry is by
	// processing time.
	time.Sleep(3 * time.Second)
	execAll(t, c, "CHECKPOINT", "INSERT INTO b VALUES (2, 'b2')", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM j_all"); got != "1|a1|b1; 2|a2|b2" {
		t.Fatalf("j_all = %q, want both pairs (no TTL)", got)
	}
	// In j key 2's left row is gone, so b2 matches nothing; the pair of
	// key 1 came from expired state and stays as it is.
	if got := rowSet(t, c, "SELECT * FROM j"); got != "1|a1|b1" {
		t.Fatalf("j = %q, want only the pair of key 1 (key 2 expired)", got)
	}

	// Database-wide: j_all takes SET state.ttl while it runs.
	execAll(t, c, "SET state.ttl = '1s'")
	if v := show(t, srv, "state.ttl"); v != "1s" {
		t.Fatalf("SHOW state.ttl = %q", v)
	}
	time.Sleep(2 * time.Second)
	execAll(t, c, "CHECKPOINT", "INSERT INTO a VALUES (2, 'a2b')", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM j_all"); got != "1|a1|b1; 2|a2|b2" {
		t.Fatalf("j_all = %q, want no new pair (key 2 expired under the database TTL)", got)
	}
	// In j, b2 idled past j's own TTL meanwhile: a2b matches nothing.
	if got := rowSet(t, c, "SELECT * FROM j"); got != "1|a1|b1" {
		t.Fatalf("j = %q, want only the pair of key 1 (b2 expired)", got)
	}

	// ALTER turns j's expiry off, whatever the database's: its keys stay
	// however long they idle.
	execAll(t, c, "ALTER MATERIALIZED VIEW j SET (state.ttl = 'off')")
	time.Sleep(3 * time.Second)
	execAll(t, c, "CHECKPOINT", "INSERT INTO b VALUES (2, 'b2b')", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM j"); got != "1|a1|b1; 2|a2b|b2b" {
		t.Fatalf("j = %q, want a2b matched with b2b too (TTL off)", got)
	}

	// Bad values change nothing.
	_, err := c.Exec(ctx, "SET state.ttl = 'banana'")
	wantCode(t, "SET state.ttl = 'banana'", err, "22023")
	_, err = c.Exec(ctx, "ALTER MATERIALIZED VIEW j SET (state.ttl = 'soon')")
	wantCode(t, "ALTER ... state.ttl = 'soon'", err, "22023")
	_, err = c.Exec(ctx, "CREATE MATERIALIZED VIEW j2 AS SELECT * FROM a WITH (state.ttl = 'x')")
	wantCode(t, "CREATE ... WITH (state.ttl = 'x')", err, "22023")
	if v := show(t, srv, "state.ttl"); v != "1s" {
		t.Fatalf("SHOW state.ttl = %q after a refused SET", v)
	}
	// The options survive a restart.
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	if got := rowSet(t, c, "SELECT * FROM j"); got != "1|a1|b1; 2|a2b|b2b" {
		t.Fatalf("j after a restart = %q", got)
	}
}

// TestStateTTLJoinClocksStored: a join key's idle clock is stored with its
// rows, so after kill -9 the key expires at its last change + TTL, not at
// the restart + TTL.
func TestStateTTLJoinClocksStored(t *testing.T) {
	dir := t.TempDir()
	srv := StartServer(t, dir)
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE a (k BIGINT, x TEXT)",
		"CREATE TABLE b (k BIGINT, y TEXT)",
		"CREATE MATERIALIZED VIEW j AS SELECT a.k, x, y FROM a JOIN b ON a.k = b.k WITH (state.ttl = '8s')",
		"CREATE MATERIALIZED VIEW j_all AS SELECT a.k, x, y FROM a JOIN b ON a.k = b.k",
		"INSERT INTO a VALUES (1, 'a1'), (2, 'a2')",
		"INSERT INTO b VALUES (2, 'b2')",
		"CHECKPOINT")
	// Key 1 is last changed at t0 (its clock is at most t0); the server
	// is killed at least 3 s later, and at t0 + 9 s key 1 has expired:
	// had the restart started its clock anew, it would expire at the
	// earliest at t0 + 11 s. Key 2 is changed again after the restart, so
	// its clock runs from then.
	t0 := time.Now()
	time.Sleep(3 * time.Second)
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c, "INSERT INTO a VALUES (2, 'a2b')", "CHECKPOINT")
	if d := time.Until(t0.Add(9 * time.Second)); d > 0 {
		time.Sleep(d)
	} else {
		t.Logf("the restart ended %s after t0 + 9 s: the test cannot tell a restarted clock", -d)
	}
	execAll(t, c, "CHECKPOINT", "INSERT INTO b VALUES (1, 'b1'), (2, 'b2b')", "CHECKPOINT")
	if got := rowSet(t, c, "SELECT * FROM j_all"); got != "1|a1|b1; 2|a2b|b2; 2|a2b|b2b; 2|a2|b2; 2|a2|b2b" {
		t.Fatalf("j_all = %q (no TTL)", got)
	}
	// Key 1's left row expired 8 s after its last change, across the
	// restart: b1 matches nothing. Key 2 was touched after the restart
	// and is all there.
	if got := rowSet(t, c, "SELECT * FROM j"); got != "2|a2b|b2; 2|a2b|b2b; 2|a2|b2; 2|a2|b2b" {
		t.Fatalf("j = %q, want key 1 expired %s after its last change, across kill -9", got, time.Since(t0))
	}
	execAll(t, c, "ALTER MATERIALIZED VIEW j SET (state.ttl = 'off')")
	srv.Stop()
	// Left: b1 (key 1's new row) and key 2's four rows.
	if n := stateEntries(t, dir, "j"); n != 5 {
		t.Errorf("%d state entries, want 5", n)
	}
}
