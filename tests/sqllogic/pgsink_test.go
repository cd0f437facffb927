package sqllogic

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Tests of the PostgreSQL sink (connector/postgres) against a private
// PostgreSQL 15: the target tables end equal to streamdb's views and to
// the batch query over the same input, across retractions, an outage of
// PostgreSQL and kill -9 of streamdb.

// pgSinkURL is the sink's url option for database db of p, as user.
func pgSinkURL(p *PG, user, password, db string) string {
	u := url.URL{Scheme: "postgres", Host: p.addr, Path: "/" + db, RawQuery: "sslmode=disable"}
	if password != "" {
		u.User = url.UserPassword(user, password)
	} else {
		u.User = url.User(user)
	}
	return u.String()
}

// sortedRows runs q and returns its rows as text lines, sorted.
func sortedRows(t testing.TB, c *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := plainRows(c, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(rows)
	return rows
}

// targetDiff describes how got differs from want (empty: equal).
func targetDiff(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	have := map[string]int{}
	for _, r := range got {
		have[r]++
	}
	for _, r := range want {
		have[r]--
	}
	var d []string
	for r, n := range have {
		switch {
		case n > 0:
			d = append(d, fmt.Sprintf("+ %s (x%d)", r, n))
		case n < 0:
			d = append(d, fmt.Sprintf("- %s (x%d)", r, -n))
		}
	}
	slices.Sort(d)
	if len(d) > 20 {
		d = append(d[:20], fmt.Sprintf("... %d more", len(d)-20))
	}
	return fmt.Sprintf("%d rows, want %d:\n%s", len(got), len(want), strings.Join(d, "\n"))
}

// waitTargetEquals polls until PostgreSQL's pgQ equals streamdb's every
// one of sdbQs (a view and the batch query over its input).
func waitTargetEquals(t testing.TB, pg, sdb *pgx.Conn, pgQ string, sdbQs ...string) {
	t.Helper()
	start := time.Now()
	for {
		got := sortedRows(t, pg, pgQ)
		diff := ""
		for _, q := range sdbQs {
			if d := targetDiff(got, sortedRows(t, sdb, q)); d != "" {
				diff = q + ": " + d
				break
			}
		}
		if diff == "" {
			t.Logf("%s equals %d queries after %v (%d rows)", pgQ, len(sdbQs), time.Since(start).Round(time.Millisecond), len(got))
			return
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("PostgreSQL's %s never equalled streamdb's %s", pgQ, diff)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// evRows are INSERT values for ev: ids [from, from+n), keys id%17, a
// label with the characters COPY escapes.
func evRows(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		if i > from {
			b.WriteString(", ")
		}
		label := fmt.Sprintf("l%d", i%5)
		switch i % 7 {
		case 1:
			label += `\tab	x`
		case 2:
			label += "new\nline"
		case 3:
			label = ""
		}
		lbl := "'" + strings.ReplaceAll(label, "'", "''") + "'"
		if i%11 == 0 {
			lbl = "NULL"
		}
		fmt.Fprintf(&b, "(%d, %d, %d, %s, TIMESTAMP '2026-01-01 00:00:00' + INTERVAL '%d' SECOND)", i, i%17, (i*7919)%1000-300, lbl, i)
	}
	return b.String()
}

const (
	evTable = "CREATE TABLE ev (id BIGINT, k BIGINT, v BIGINT, label VARCHAR, ts TIMESTAMP)"
	// per_k's groups leave it and come back as their counts go through
	// multiples of 4 (HAVING): deletes besides updates.
	perKView  = "CREATE MATERIALIZED VIEW per_k AS SELECT k, count(*) AS n, sum(v) AS total, max(label) AS label FROM ev GROUP BY k HAVING count(*) % 4 <> 0"
	perKBatch = "SELECT k, count(*), sum(v), max(label) FROM ev GROUP BY k HAVING count(*) % 4 <> 0"
	perKPG    = "CREATE TABLE per_k (k bigint PRIMARY KEY, n bigint NOT NULL, total numeric, label text, note text DEFAULT 'x')"
)

// TestPostgresSink: append and upsert sinks over views fed by INSERTs,
// with retractions (HAVING, top-N) and text that COPY escapes; the
// CREATE-time checks and their SQLSTATEs; SHOW SINKS and DROP SINK.
func TestPostgresSink(t *testing.T) {
	p := StartPG(t)
	pg := p.Conn(t)
	ctx := context.Background()
	execAll(t, pg, perKPG,
		"CREATE TABLE top2 (k bigint, rn bigint, id bigint, v bigint, PRIMARY KEY (k, rn))",
		"CREATE TABLE evs (id bigint, k bigint, v bigint, label varchar(40), ts timestamp)",
		"CREATE TABLE nokey (k bigint, n bigint, total numeric, label text)",
		"CREATE TABLE short (k bigint PRIMARY KEY, n bigint)",
		"CREATE TABLE wrongtype (k bigint PRIMARY KEY, n bigint, total numeric, label integer)",
		"CREATE DATABASE other")
	// A role that must give its password over TCP: 28P01 for a wrong one.
	var hba string
	if err := pg.QueryRow(ctx, "SHOW hba_file").Scan(&hba); err != nil {
		t.Fatal(err)
	}
	execAll(t, pg, "CREATE ROLE app LOGIN PASSWORD 'secret'",
		"GRANT ALL ON SCHEMA public TO app",
		"GRANT ALL ON ALL TABLES IN SCHEMA public TO app",
		fmt.Sprintf(`COPY (SELECT * FROM (VALUES ('local all all trust'), ('host all postgres 127.0.0.1/32 trust'),
		  ('host all all 127.0.0.1/32 scram-sha-256')) v) TO '%s'`, hba),
		"SELECT pg_reload_conf()")

	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET checkpoint.interval = '200ms'", evTable, perKView,
		"CREATE MATERIALIZED VIEW top2 AS SELECT * FROM (SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn, id, v FROM ev) t WHERE rn <= 2",
		"CREATE MATERIALIZED VIEW evs AS SELECT id, k, v, label, ts FROM ev WHERE v % 2 = 0",
		"INSERT INTO ev VALUES "+evRows(0, 300))
	with := func(u, table, typ, extra string) string {
		return fmt.Sprintf("WITH (connector = 'postgres', url = '%s', table.name = '%s', type = '%s'%s)", u, table, typ, extra)
	}
	appURL := pgSinkURL(p, "app", "secret", "postgres")
	execAll(t, c, "CREATE SINK per_k_out FROM per_k "+with(appURL, "per_k", "upsert", ""),
		"CREATE SINK top2_out FROM top2 "+with(appURL, "public.top2", "upsert", ", primary_key = 'k, rn'"),
		"CREATE SINK evs_out FROM evs "+with(appURL, "evs", "append", ""))

	refused := []struct{ what, sql, code string }{
		{"append over a view that retracts", "CREATE SINK bad FROM per_k " + with(appURL, "per_k", "append", ""), "0A000"},
		{"unknown type", "CREATE SINK bad FROM per_k " + with(appURL, "per_k", "merge", ""), "22023"},
		{"unknown option", "CREATE SINK bad FROM per_k " + with(appURL, "per_k", "upsert", ", batch = '10'"), "22023"},
		{"primary_key on append", "CREATE SINK bad FROM evs " + with(appURL, "evs", "append", ", primary_key = 'id'"), "22023"},
		{"no url", "CREATE SINK bad FROM per_k WITH (connector = 'postgres', table.name = 'per_k', type = 'upsert')", "22023"},
		{"unknown connector", "CREATE SINK bad FROM per_k WITH (connector = 'mysql')", "22023"},
		{"missing table", "CREATE SINK bad FROM per_k " + with(appURL, "nope", "upsert", ""), "42P01"},
		{"missing column", "CREATE SINK bad FROM per_k " + with(appURL, "short", "upsert", ""), "42703"},
		{"primary_key not a view column", "CREATE SINK bad FROM top2 " + with(appURL, "top2", "upsert", ", primary_key = 'k,zz'"), "42703"},
		{"type mismatch", "CREATE SINK bad FROM per_k " + with(appURL, "wrongtype", "upsert", ""), "42804"},
		{"upsert key without a unique constraint", "CREATE SINK bad FROM per_k " + with(appURL, "nokey", "upsert", ""), "42P10"},
		{"upsert on a key that is not the constraint's", "CREATE SINK bad FROM top2 " + with(appURL, "top2", "upsert", ", primary_key = 'k'"), "42P10"},
		{"keyless view without primary_key", "CREATE SINK bad FROM evs " + with(appURL, "evs", "upsert", ""), "22023"},
		{"bad password", "CREATE SINK bad FROM per_k " + with(pgSinkURL(p, "app", "wrong", "postgres"), "per_k", "upsert", ""), "28P01"},
		{"unknown database", "CREATE SINK bad FROM per_k " + with(pgSinkURL(p, "postgres", "", "nodb"), "per_k", "upsert", ""), "3D000"},
		{"unreachable", "CREATE SINK bad FROM per_k " + with("postgres://app@127.0.0.1:1/postgres?sslmode=disable", "per_k", "upsert", ""), "08001"},
		{"table in another database", "CREATE SINK bad FROM per_k " + with(pgSinkURL(p, "postgres", "", "other"), "per_k", "upsert", ""), "42P01"},
	}
	for _, r := range refused {
		_, err := c.Exec(ctx, r.sql)
		wantCode(t, r.what, err, r.code)
	}

	// Many inserts in small statements: groups enter and leave per_k,
	// ranks shift in top2, evs only grows.
	for i := 300; i < 3000; i += 90 {
		execAll(t, c, "INSERT INTO ev VALUES "+evRows(i, 90))
	}
	waitTargetEquals(t, pg, c, "SELECT k, n, total, label FROM per_k", "SELECT k, n, total, label FROM per_k", perKBatch)
	waitTargetEquals(t, pg, c, "SELECT k, rn, id, v FROM top2", "SELECT k, rn, id, v FROM top2",
		"SELECT k, rn, id, v FROM (SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn, id, v FROM ev) t WHERE rn <= 2")
	waitTargetEquals(t, pg, c, "SELECT id, k, v, label, ts FROM evs", "SELECT id, k, v, label, ts FROM evs",
		"SELECT id, k, v, label, ts FROM ev WHERE v % 2 = 0")
	if rows := sortedRows(t, pg, "SELECT DISTINCT note FROM per_k"); !slices.Equal(rows, []string{"x"}) {
		t.Fatalf("a column the view lacks keeps its default: %v", rows)
	}
	rows := mustRows(t, c, "SHOW SINKS")
	t.Logf("SHOW SINKS:\n%s", strings.Join(rows, "\n"))
	if len(rows) != 3 || !strings.Contains(rows[0], "'RUNNING'") || !strings.Contains(rows[0], "'postgres'") || !strings.Contains(rows[0], "'append'") {
		t.Fatalf("SHOW SINKS: %v", rows)
	}
	if got := sortedRows(t, pg, "SELECT sink_name FROM streamdb_sink_progress"); !slices.Equal(got, []string{"evs_out", "per_k_out", "top2_out"}) {
		t.Fatalf("progress rows: %v", got)
	}

	// STOP JOB / START JOB with rows in between: the sinks go on.
	execAll(t, c, "STOP JOB per_k WITH SAVEPOINT sp1", "INSERT INTO ev VALUES "+evRows(3000, 500), "START JOB per_k")
	waitTargetEquals(t, pg, c, "SELECT k, n, total, label FROM per_k", perKBatch)
	execAll(t, c, "DROP SINK top2_out", "DROP SINK IF EXISTS top2_out", "INSERT INTO ev VALUES "+evRows(3500, 100))
	waitTargetEquals(t, pg, c, "SELECT id, k, v, label, ts FROM evs", "SELECT id, k, v, label, ts FROM ev WHERE v % 2 = 0")
	if rows := mustRows(t, c, "SHOW SINKS"); len(rows) != 2 {
		t.Fatalf("SHOW SINKS after DROP SINK: %v", rows)
	}
}

// waitSinkState polls SHOW SINKS until sink's state is want and its row
// holds part, and returns the row.
func waitSinkState(t testing.TB, c *pgx.Conn, sink, want, part string) string {
	t.Helper()
	start := time.Now()
	for {
		for _, r := range mustRows(t, c, "SHOW SINKS") {
			if strings.HasPrefix(r, "'"+sink+"'") && strings.Contains(r, "'"+want+"'") && strings.Contains(r, part) {
				t.Logf("%s is %s after %v: %s", sink, want, time.Since(start).Round(time.Millisecond), r)
				return r
			}
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("sink %s never became %s with %q: %v", sink, want, part, mustRows(t, c, "SHOW SINKS"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPostgresSinkOutage: PostgreSQL goes away while rows keep coming;
// the sink is RESTARTING with the cause in SHOW SINKS, the view goes on,
// and once PostgreSQL is back the table catches up with nothing lost.
func TestPostgresSinkOutage(t *testing.T) {
	p := StartPG(t)
	pg := p.Conn(t)
	execAll(t, pg, perKPG, "CREATE TABLE evs (id bigint, k bigint, v bigint, label text, ts timestamp)")
	srv := StartServer(t, "")
	c := srv.Conn(t)
	u := pgSinkURL(p, "postgres", "", "postgres")
	execAll(t, c, "SET checkpoint.interval = '200ms'", evTable, perKView,
		"CREATE MATERIALIZED VIEW evs AS SELECT * FROM ev",
		"INSERT INTO ev VALUES "+evRows(0, 500),
		fmt.Sprintf("CREATE SINK per_k_out FROM per_k WITH (connector = 'postgres', url = '%s', table.name = 'per_k', type = 'upsert')", u),
		fmt.Sprintf("CREATE SINK evs_out FROM evs WITH (connector = 'postgres', url = '%s', table.name = 'evs', type = 'append')", u))
	waitTargetEquals(t, pg, c, "SELECT k, n, total, label FROM per_k", perKBatch)

	p.Stop(t)
	for i := 500; i < 2000; i += 100 {
		execAll(t, c, "INSERT INTO ev VALUES "+evRows(i, 100))
	}
	// The cause: first the server's shutdown (57P01) or a lost
	// connection, then, while it is down, 08001 from each retry.
	for _, s := range []string{"per_k_out", "evs_out"} {
		waitSinkState(t, c, s, "RESTARTING", "'08001: postgres sink: could not connect to PostgreSQL at "+p.addr)
	}
	// The view and checkpoints do not wait for the sink.
	waitQuery(t, c, "SELECT count(*) FROM evs", "2000")
	execAll(t, c, "CHECKPOINT")
	p.Start(t)
	pg = p.Conn(t)
	waitTargetEquals(t, pg, c, "SELECT k, n, total, label FROM per_k", "SELECT k, n, total, label FROM per_k", perKBatch)
	waitTargetEquals(t, pg, c, "SELECT id, k, v, label, ts FROM evs", "SELECT id, k, v, label, ts FROM ev")
	waitSinkState(t, c, "per_k_out", "RUNNING", "| NULL")
	waitSinkState(t, c, "evs_out", "RUNNING", "| NULL")
}

// TestPostgresSinkKill9: kill -9 of streamdb while rows arrive and the
// sinks write, five times, plus a crash right after a PostgreSQL commit
// before streamdb notes it (failpoint): the upsert table equals the view
// and the batch query over what streamdb holds, which includes every
// acknowledged row, and the append table holds each row exactly once.
func TestPostgresSinkKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kill -9 loop")
	}
	p := StartPG(t)
	pg := p.Conn(t)
	execAll(t, pg, perKPG, "CREATE TABLE evs (id bigint, k bigint, v bigint, label text, ts timestamp)")
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	// Two processes die at failpoints: one right after a transaction is
	// written in PostgreSQL, before its commit (the restart must write it
	// again: nothing lost), one right after a commit, before streamdb notes
	// it (the restart must find it in the progress table: nothing twice).
	u := pgSinkURL(p, "postgres", "", "postgres")
	next := 0       // the next id
	var acked []int // ids of acknowledged INSERTs' first rows, with 50 each
	insert := func(c *pgx.Conn) error {
		_, err := c.Exec(context.Background(), "INSERT INTO ev VALUES "+evRows(next, 50))
		if err == nil {
			acked = append(acked, next)
		}
		next += 50
		return err
	}
	dir := ""
	var srv *Server
	for i, fp := range []string{"evs_out:sink_precommit:3:kill", "evs_out:sink_postcommit:2:kill", "per_k_out:sink_postcommit:2:kill"} {
		srv = startServer(t, bin, []string{"STREAMDB_FAILPOINTS=" + fp}, dir)
		dir = srv.DataDir()
		c := srv.Conn(t)
		if i == 0 {
			execAll(t, c, "SET checkpoint.interval = '200ms'", evTable, perKView,
				"CREATE MATERIALIZED VIEW evs AS SELECT * FROM ev",
				fmt.Sprintf("CREATE SINK per_k_out FROM per_k WITH (connector = 'postgres', url = '%s', table.name = 'per_k', type = 'upsert')", u),
				fmt.Sprintf("CREATE SINK evs_out FROM evs WITH (connector = 'postgres', url = '%s', table.name = 'evs', type = 'append')", u))
		}
		for deadline := time.Now().Add(2 * time.Minute); srv.running() && time.Now().Before(deadline); {
			if insert(c) != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		for deadline := time.Now().Add(10 * time.Second); srv.running() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if srv.running() {
			t.Fatalf("failpoint %s did not kill streamdb", fp)
		}
	}
	srv = StartServer(t, dir)
	for round := 0; round < 5; round++ {
		c := srv.Conn(t)
		// Insert from another goroutine and kill -9 in the middle of it.
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() && insert(c) == nil {
			}
		}()
		time.Sleep(time.Duration(400+300*round) * time.Millisecond)
		srv.Kill9()
		stop.Store(true)
		<-done
		srv.Restart(t)
	}
	c := srv.Conn(t)
	// No acknowledged row is lost in streamdb...
	have := map[string]bool{}
	for _, r := range sortedRows(t, c, "SELECT id FROM ev") {
		if have[r] {
			t.Fatalf("id %s twice in ev", r)
		}
		have[r] = true
	}
	for _, id := range acked {
		for i := id; i < id+50; i++ {
			if !have[fmt.Sprint(i)] {
				t.Fatalf("acknowledged row %d is lost", i)
			}
		}
	}
	t.Logf("%d INSERTs acknowledged, %d rows in ev", len(acked), len(have))
	// ...and PostgreSQL ends equal to streamdb, each appended row once.
	waitTargetEquals(t, pg, c, "SELECT k, n, total, label FROM per_k", "SELECT k, n, total, label FROM per_k", perKBatch)
	waitTargetEquals(t, pg, c, "SELECT id, k, v, label, ts FROM evs", "SELECT id, k, v, label, ts FROM evs", "SELECT id, k, v, label, ts FROM ev")
	var n, distinct int
	if err := pg.QueryRow(context.Background(), "SELECT count(*), count(DISTINCT id) FROM evs").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != distinct || n != len(have) {
		t.Fatalf("evs in PostgreSQL: %d rows, %d distinct ids, want %d once each", n, distinct, len(have))
	}
}

// TestPostgresSinkRestore: RESTORE of the views two sinks read, then
// kill -9 inside the sinks' start-over window. The upsert sink
// resynchronizes its table with the restored view (groups HAVING had
// dropped come back, ones it had kept may go), and the append sink goes
// on from where it got to, so every row of the view is in its table.
func TestPostgresSinkRestore(t *testing.T) {
	p := StartPG(t)
	pg := p.Conn(t)
	execAll(t, pg, perKPG, "CREATE TABLE evs (id bigint, k bigint, v bigint, label text, ts timestamp)")
	srv := StartServer(t, "")
	c := srv.Conn(t)
	u := pgSinkURL(p, "postgres", "", "postgres")
	execAll(t, c, "SET checkpoint.interval = '200ms'", evTable, perKView,
		"CREATE MATERIALIZED VIEW evs AS SELECT * FROM ev",
		"INSERT INTO ev VALUES "+evRows(0, 400),
		fmt.Sprintf("CREATE SINK per_k_out FROM per_k WITH (connector = 'postgres', url = '%s', table.name = 'per_k', type = 'upsert')", u),
		fmt.Sprintf("CREATE SINK evs_out FROM evs WITH (connector = 'postgres', url = '%s', table.name = 'evs', type = 'append')", u))
	waitTargetEquals(t, pg, c, "SELECT k, n, total, label FROM per_k", perKBatch)
	execAll(t, c, "CHECKPOINT")
	var ck int64
	if err := c.QueryRow(context.Background(), "SELECT max(id) FROM streamdb_checkpoints WHERE status = 'COMPLETED'").Scan(&ck); err != nil {
		t.Fatal(err)
	}
	execAll(t, c, "INSERT INTO ev VALUES "+evRows(400, 250))
	waitTargetEquals(t, pg, c, "SELECT k, n, total, label FROM per_k", perKBatch)
	waitTargetEquals(t, pg, c, "SELECT id, k, v, label, ts FROM evs", "SELECT id, k, v, label, ts FROM ev")

	// A row of the abandoned timeline the restored view lacks (a stream
	// replays every row, so the view itself ends with all its keys): the
	// resync must delete it.
	execAll(t, pg, "INSERT INTO per_k VALUES (999, 1, 1, 'abandoned')")
	execAll(t, c, fmt.Sprintf("RESTORE FROM CHECKPOINT %d", ck))
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c, "INSERT INTO ev VALUES "+evRows(650, 130))
	waitTargetEquals(t, pg, c, "SELECT k, n, total, label FROM per_k", "SELECT k, n, total, label FROM per_k", perKBatch)
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		got := map[string]bool{}
		for _, r := range sortedRows(t, pg, "SELECT DISTINCT id, k, v, label, ts FROM evs") {
			got[r] = true
		}
		want := sortedRows(t, c, "SELECT id, k, v, label, ts FROM evs")
		missing := 0
		for _, r := range want {
			if !got[r] {
				missing++
			}
		}
		if missing == 0 && len(got) == len(want) {
			t.Logf("every one of the %d rows of evs is in PostgreSQL", len(want))
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("PostgreSQL's evs lacks %d of the view's %d rows (has %d distinct)", missing, len(want), len(got))
		}
	}
}

// TestPostgresSinkTypes: a view with a column of each type whose text
// form is not its stored bytes (bytea, jsonb's binary layout, timetz's
// packed int64) or that COPY must escape (arrays, jsonb strings) reaches
// PostgreSQL equal, row for row as text, to the view read over the wire.
func TestPostgresSinkTypes(t *testing.T) {
	p := StartPG(t)
	pg := p.Conn(t)
	const cols = "id, b, u, tz, ta, j, n, iv, ts, ia, tm"
	execAll(t, pg, "SET TimeZone = 'UTC'",
		"CREATE TABLE typed (id bigint PRIMARY KEY, b bytea, u uuid, tz timetz, ta text[], j jsonb, n numeric(20,4), iv interval, ts timestamptz, ia bigint[], tm time)")
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET TimeZone = 'UTC'",
		"CREATE TABLE t (id BIGINT, b BYTEA, u UUID, tz TIMETZ, ta TEXT[], j JSONB, n NUMERIC(20,4), iv INTERVAL, ts TIMESTAMPTZ, ia BIGINT[], tm TIME)",
		"CREATE MATERIALIZED VIEW typed AS SELECT "+cols+" FROM t",
		`INSERT INTO t VALUES
		 (1, '\x00ff5c090a0d41'::bytea, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '12:34:56.789+05:30', ARRAY['a', 'b c', 'back\slash', 'tab	x', NULL, ''], '{"k": "v\tw\\x", "n": [1, 2.50, null], "q": "\""}', 12345.6789, '1 year 2 mons 3 days 04:05:06.5', '2026-01-02 03:04:05.678+02', ARRAY[1, -2, NULL], '23:59:59.5'),
		 (2, '\x'::bytea, '00000000-0000-0000-0000-000000000000', '00:00:00-11', ARRAY[]::TEXT[], '"str\\ing"', -0.0001, '-1 days -00:00:01', '1999-12-31 23:59:59.999999+00', ARRAY[]::BIGINT[], '00:00:00'),
		 (3, 'a\\b'::bytea, NULL, NULL, NULL, 'null', NULL, NULL, NULL, NULL, NULL),
		 (4, NULL, NULL, '23:59:59.999999+14', ARRAY['{}', '"q"', 'NULL'], '[]', 0, '0', '2000-02-29 12:00:00+00', ARRAY[9223372036854775807], NULL)`)
	execAll(t, c, fmt.Sprintf("CREATE SINK typed_out FROM typed WITH (connector = 'postgres', url = '%s', table.name = 'typed', type = 'append')",
		pgSinkURL(p, "postgres", "", "postgres")))
	waitTargetEquals(t, pg, c, "SELECT "+cols+" FROM typed", "SELECT "+cols+" FROM typed")
}
