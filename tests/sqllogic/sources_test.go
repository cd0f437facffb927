package sqllogic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamdb/streamdb/nexmark"
)

// TestNexmarkSource is TestNexmark with streamdb reading CREATE SOURCE ...
// (connector = 'nexmark') directly while PostgreSQL gets the same events
// through COPY: every query's view and its batch query over the bounded
// sources must equal PostgreSQL's result.
func TestNexmarkSource(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Nexmark volumes; run in the plain test step")
	}
	const (
		events = 20000
		seed   = 20261201
	)
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, ddl := range nexmark.SourceDDL(events, seed, 2) {
		mustExec(t, sdb, "streamdb", ddl)
	}
	for _, ddl := range nexmarkDDL {
		mustExec(t, pgc, "PostgreSQL", ddl)
	}
	if err := newNexmarkGen(seed).events(events).copyTo(context.Background(), pgc); err != nil {
		t.Fatal(err)
	}
	for _, q := range nexmarkQueries {
		mustExec(t, sdb, "streamdb", "CREATE MATERIALIZED VIEW "+q.name+" AS "+q.sql)
	}
	// A CHECKPOINT has every job read its bounded splits to the end.
	mustExec(t, sdb, "streamdb", "CHECKPOINT")
	mustExec(t, sdb, "streamdb", "CHECKPOINT")
	for _, q := range nexmarkQueries {
		checkNexmark(t, 0, q, sdb, pgc)
	}
}

// waitSame polls until query got returns the rows of query want (the
// bounded source's batch query), within 2 minutes, and fails with the
// difference otherwise.
func waitSame(t *testing.T, srv *Server, what, got, want string) {
	t.Helper()
	c := srv.Conn(t)
	wantRows, err := queryRows(c, want)
	if err != nil {
		t.Fatalf("%s: %v", want, err)
	}
	start := time.Now()
	for {
		rows, err := queryRows(c, got)
		if err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		diff := diffRows(rows, wantRows)
		if diff == "" {
			t.Logf("%s: %d rows equal the batch query after %v", what, len(rows), time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("%s: the view never equalled the batch query over the bounded source:\n%s", what, diff)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSourceExactlyOnceKill9: views over a rate-limited nexmark source and
// a datagen source are killed with SIGKILL mid-run; after the restart they
// regenerate from the checkpointed positions and end equal to the batch
// query over the bounded sources: no event lost, none counted twice (the
// multiset view of single bids shows duplicates as extra rows).
func TestSourceExactlyOnceKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generator volumes and kill -9; run in the plain test step")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		"SET checkpoint.interval = '200ms'",
		`CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, date_time TIMESTAMP)
		  WITH (connector = 'nexmark', nexmark.table = 'bid', nexmark.events = 150000, nexmark.rate = 50000, nexmark.split = 2)`,
		`CREATE SOURCE readings (id BIGINT, sensor INT, value DOUBLE PRECISION)
		  WITH (connector = 'datagen', rows_per_second = 20000, fields.id.kind = 'sequence', fields.id.start = 1,
		        fields.id.end = 60000, fields.sensor.min = 1, fields.sensor.max = 50)`,
		"CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n, sum(price) AS s, max(date_time) AS last FROM bid GROUP BY channel",
		"CREATE MATERIALIZED VIEW big_bids AS SELECT auction, bidder, price, date_time FROM bid WHERE price > 5000000",
		"CREATE MATERIALIZED VIEW per_sensor AS SELECT sensor, count(*) AS n, sum(id) AS ids, sum(value) AS v FROM readings GROUP BY sensor")
	// Wait for some progress, then kill mid-run.
	deadline := time.Now().Add(time.Minute)
	var seen int64
	for seen == 0 && time.Now().Before(deadline) {
		if err := c.QueryRow(context.Background(), "SELECT coalesce(sum(n), 0) FROM per_channel").Scan(&seen); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var total int64
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM bid").Scan(&total); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed with %d of %d bids in the view", seen, total)
	if seen == 0 || seen >= total {
		t.Logf("warning: the kill did not fall mid-run")
	}
	srv.Kill9()
	srv.Restart(t)
	waitSame(t, srv, "per_channel", "SELECT * FROM per_channel",
		"SELECT channel, count(*), sum(price), max(date_time) FROM bid GROUP BY channel")
	waitSame(t, srv, "big_bids", "SELECT * FROM big_bids", "SELECT auction, bidder, price, date_time FROM bid WHERE price > 5000000")
	waitSame(t, srv, "per_sensor", "SELECT * FROM per_sensor",
		"SELECT sensor, count(*), sum(id), sum(value) FROM readings GROUP BY sensor")
}

// TestSourceRestoreRewinds: RESTORE from a savepoint rewinds a view over a
// generator source to the savepoint's position: right after it the view is
// the savepoint's, and it then regenerates the rest, ending equal to the
// batch query (a position not rewound would leave events out, a state not
// rewound would count some twice).
func TestSourceRestoreRewinds(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		`CREATE SOURCE bid (auction BIGINT, price BIGINT, channel VARCHAR)
		  WITH (connector = 'nexmark', nexmark.table = 'bid', nexmark.events = 100000, nexmark.rate = 25000)`,
		"CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n, sum(price) AS s FROM bid GROUP BY channel")
	var atSave int64
	for deadline := time.Now().Add(time.Minute); atSave == 0 && time.Now().Before(deadline); {
		execAll(t, c, "CHECKPOINT")
		if err := c.QueryRow(context.Background(), "SELECT coalesce(sum(n), 0) FROM per_channel").Scan(&atSave); err != nil {
			t.Fatal(err)
		}
	}
	execAll(t, c, "CREATE SAVEPOINT sp")
	var saved int64
	if err := c.QueryRow(context.Background(), "SELECT sum(n) FROM per_channel AS OF SAVEPOINT sp").Scan(&saved); err != nil {
		t.Fatal(err)
	}
	const all = "SELECT channel, count(*), sum(price) FROM bid GROUP BY channel"
	waitSame(t, srv, "before RESTORE", "SELECT * FROM per_channel", all)
	execAll(t, c, "RESTORE per_channel FROM SAVEPOINT sp")
	var after, total int64
	if err := c.QueryRow(context.Background(), "SELECT sum(n) FROM per_channel").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM bid").Scan(&total); err != nil {
		t.Fatal(err)
	}
	t.Logf("savepoint at %d bids; right after RESTORE the view has %d of %d", saved, after, total)
	if after >= total || after < saved {
		t.Fatalf("right after RESTORE the view has %d bids; the savepoint has %d of %d", after, saved, total)
	}
	waitSame(t, srv, "after RESTORE", "SELECT * FROM per_channel", all)
}

// TestSourceDDL: SHOW SOURCES, DROP SOURCE and its dependency error,
// option validation, batch reads of bounded and unbounded sources.
func TestSourceDDL(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		`CREATE SOURCE person (id BIGINT, name VARCHAR, state VARCHAR, date_time TIMESTAMP,
		   WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
		  WITH (connector = 'nexmark', nexmark.table = 'person', nexmark.events = 5000)`,
		`CREATE SOURCE readings (sensor INT, value DOUBLE PRECISION, ts TIMESTAMP)
		  WITH (connector = 'datagen', rows_per_second = 10000, fields.sensor.min = 1, fields.sensor.max = 100)`,
		`CREATE SOURCE seq (id BIGINT, label TEXT, ok BOOLEAN)
		  WITH (connector = 'datagen', "rows-per-second" = 0, fields.id.kind = 'sequence', fields.id.start = 10,
		        fields.id.end = 1009, fields.label.length = 5, fields.ok.null_rate = 0.5)`)
	got, err := queryRows(c, "SHOW SOURCES")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !strings.Contains(strings.Join(got, "\n"), "nexmark") || !strings.Contains(strings.Join(got, "\n"), "datagen") {
		t.Fatalf("SHOW SOURCES:\n%s", strings.Join(got, "\n"))
	}
	t.Logf("SHOW SOURCES:\n%s", strings.Join(got, "\n"))

	// Bounded batch reads: 5000 events hold 100 persons, ids 1000..1099.
	var n, lo, hi int64
	if err := c.QueryRow(context.Background(), "SELECT count(*), min(id), max(id) FROM person").Scan(&n, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if n != 100 || lo != 1000 || hi != 1099 {
		t.Fatalf("person: %d rows, ids %d..%d; want 100, 1000..1099", n, lo, hi)
	}
	var sum, nulls int64
	if err := c.QueryRow(context.Background(), "SELECT count(*), sum(id), count(*) - count(ok) FROM seq").Scan(&n, &sum, &nulls); err != nil {
		t.Fatal(err)
	}
	if n != 1000 || sum != (10+1009)*1000/2 || nulls == 0 || nulls == 1000 {
		t.Fatalf("seq: %d rows, sum %d, %d NULLs; want 1000 rows summing to %d, some NULLs", n, sum, nulls, (10+1009)*1000/2)
	}
	// An unbounded source reads only under a LIMIT.
	wantCode(t, "unbounded batch read", func() error { _, err := queryRows(c, "SELECT count(*) FROM readings"); return err }(), "0A000")
	wantCode(t, "unbounded read under ORDER BY", func() error { _, err := queryRows(c, "SELECT * FROM readings ORDER BY value LIMIT 3"); return err }(), "0A000")
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM (SELECT * FROM readings WHERE sensor <= 100 LIMIT 500) t").Scan(&n); err != nil || n != 500 {
		t.Fatalf("LIMIT 500 over the unbounded source: %d rows, %v", n, err)
	}

	// A view over a source: DROP SOURCE is refused while it exists.
	execAll(t, c, "CREATE MATERIALIZED VIEW by_state AS SELECT state, count(*) AS n FROM person GROUP BY state", "CHECKPOINT")
	waitSame(t, srv, "by_state", "SELECT * FROM by_state", "SELECT state, count(*) FROM person GROUP BY state")
	wantCode(t, "DROP SOURCE with a view", func() error { _, err := c.Exec(context.Background(), "DROP SOURCE person"); return err }(), "2BP01")
	wantCode(t, "DROP TABLE of a source", func() error { _, err := c.Exec(context.Background(), "DROP TABLE person"); return err }(), "42809")
	wantCode(t, "DROP SOURCE of nothing", func() error { _, err := c.Exec(context.Background(), "DROP SOURCE nothing"); return err }(), "42P01")
	execAll(t, c, "DROP MATERIALIZED VIEW by_state", "DROP SOURCE person", "DROP SOURCE IF EXISTS person")
	if got, _ := queryRows(c, "SHOW SOURCES"); len(got) != 2 {
		t.Fatalf("SHOW SOURCES after DROP: %v", got)
	}

	for _, tc := range []struct{ stmt, code, msg string }{
		{"CREATE SOURCE x (a INT) WITH (connector = 'datagen', foo = 1)", "22023", `"foo"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'datagen', fields.b.min = 1)", "22023", `"fields.b.min"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'datagen', fields.a.min = 'low')", "22023", `"fields.a.min"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'datagen', fields.a.min = 5, fields.a.max = 1)", "22023", `"fields.a.max"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'datagen', fields.a.kind = 'sequence', fields.a.start = 1)", "22023", `"fields.a.end"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'datagen', fields.a.kind = 'zipf')", "22023", `"fields.a.kind"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'datagen', rows_per_second = -1)", "22023", `"rows_per_second"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'datagen', fields.a.null_rate = 2)", "22023", `"fields.a.null_rate"`},
		{"CREATE SOURCE x (a DATE) WITH (connector = 'datagen')", "0A000", `"a"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'nexmark')", "22023", `"nexmark.table"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'nexmark', nexmark.table = 'bids')", "22023", `"nexmark.table"`},
		{"CREATE SOURCE x (price BIGINT) WITH (connector = 'nexmark', nexmark.table = 'bid', nexmark.split = 0)", "22023", `"nexmark.split"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'nexmark', nexmark.table = 'bid')", "42703", `"a"`},
		{"CREATE SOURCE x (price INT) WITH (connector = 'nexmark', nexmark.table = 'bid')", "42804", `"price"`},
		{"CREATE SOURCE x (a INT) WITH (connector = 'pulsar')", "22023", `"connector"`},
		{"CREATE SOURCE x (a INT) WITH (fields.a.min = 1)", "22023", `"connector"`},
		{"CREATE SOURCE x (a INT)", "22023", "WITH"},
		{"CREATE SOURCE x (a INT) WITH (connector = 'datagen'", "42601", ""},
		{"CREATE SOURCE readings (a INT) WITH (connector = 'datagen')", "42P07", ""},
		{"INSERT INTO readings VALUES (1, 1, now())", "42809", ""},
	} {
		_, err := c.Exec(context.Background(), tc.stmt)
		pe := wantCode(t, tc.stmt, err, tc.code)
		if !strings.Contains(pe.Message, tc.msg) {
			t.Errorf("%s: message %q does not name %s", tc.stmt, pe.Message, tc.msg)
		}
	}
	// The server is still there, and the sources too.
	if got, _ := queryRows(c, "SHOW SOURCES"); len(got) != 2 {
		t.Fatalf("SHOW SOURCES at the end: %v", got)
	}
}

// TestNexmarkSuite is the suite's smoke test: each query of nexmark/queries
// runs as a view over nexmark sources of 20,000 events and must equal the
// same query run as a batch query over the sources' bounded content. A
// query the engine cannot run yet is reported as such, by its error.
func TestNexmarkSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Nexmark volumes; run in the plain test step")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	for _, ddl := range nexmark.SourceDDL(20000, 1, 2) {
		mustExec(t, c, "streamdb", ddl)
	}
	var ran, unsupported []string
	for _, q := range nexmark.Queries() {
		if _, err := c.Exec(context.Background(), "CREATE MATERIALIZED VIEW "+q.Name+" AS "+q.SQL); err != nil {
			t.Logf("%s: NOT SUPPORTED as a view: %v", q.Name, err)
			unsupported = append(unsupported, q.Name)
			continue
		}
		mustExec(t, c, "streamdb", "CHECKPOINT")
		view, err := queryRows(c, "SELECT * FROM "+q.Name)
		if err != nil {
			t.Fatalf("%s: SELECT * FROM the view: %v", q.Name, err)
		}
		batch, err := queryRows(c, q.SQL)
		if err != nil {
			t.Errorf("%s: the view runs, the batch query does not: %v", q.Name, err)
		} else if diff := diffRows(view, batch); diff != "" {
			t.Errorf("%s: the view differs from the batch query over the bounded sources (\"PostgreSQL\" below is the batch query)\n%s", q.Name, diff)
		}
		if len(view) == 0 {
			t.Errorf("%s: empty: 20,000 events do not exercise it", q.Name)
		}
		t.Logf("%s: %d rows, view = batch query", q.Name, len(view))
		ran = append(ran, q.Name)
		mustExec(t, c, "streamdb", "DROP MATERIALIZED VIEW "+q.Name)
	}
	t.Logf("checked: %s; not supported yet: %s", strings.Join(ran, " "), strings.Join(unsupported, " "))
}
