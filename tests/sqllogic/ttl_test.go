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
