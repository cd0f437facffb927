package sqllogic

import (
	"context"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Tests of the PostgreSQL CDC source (connector/pgcdc, sql/cdc.go)
// against a private PostgreSQL 15 with wal_level = logical: a view over
// the source ends equal to the same query run by PostgreSQL on its own
// table after random INSERT/UPDATE/DELETE upstream, across kill -9 of
// streamdb; CREATE's errors carry PostgreSQL's SQLSTATEs.

// startCDCPG starts PostgreSQL for CDC: wal_level as given, and password
// authentication over TCP for every role but postgres (so bad credentials
// are refused), with a replication role repl (password 'secret') that may
// read the tables.
func startCDCPG(t *testing.T, walLevel string) *PG {
	t.Helper()
	dir, err := os.MkdirTemp("", "streamdb-hba-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hba := filepath.Join(dir, "pg_hba.conf")
	rules := "local all all trust\n" +
		"host all postgres 127.0.0.1/32 trust\nhost replication postgres 127.0.0.1/32 trust\n" +
		"host all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(hba, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	p := StartPGConf(t, "wal_level="+walLevel, "hba_file="+hba, "max_replication_slots=8", "max_wal_senders=8")
	execAll(t, p.Conn(t), "CREATE ROLE repl LOGIN REPLICATION PASSWORD 'secret'")
	return p
}

// cdcWith is a CDC source's WITH clause for p.
func cdcWith(p *PG, user, password, table, slot, pub string) string {
	host, port, _ := net.SplitHostPort(p.addr)
	return fmt.Sprintf("WITH (connector = 'postgres-cdc', hostname = '%s', port = '%s', username = '%s', password = '%s', "+
		"database.name = 'postgres', schema.name = 'public', table.name = '%s', slot.name = '%s', publication.name = '%s')",
		host, port, user, password, table, slot, pub)
}

const cdcOrders = `CREATE TABLE orders (id bigint PRIMARY KEY, cust int NOT NULL, amount bigint, note text,
	price numeric(10,2), ts timestamptz, ok boolean)`

// cdcViewQ is the query the view runs and PostgreSQL checks it with.
const cdcViewQ = "SELECT cust, count(*) AS n, sum(amount) AS total, min(note) AS lo, max(price) AS hi, count(ts) AS nts FROM %s GROUP BY cust"

// orderRow is an INSERT's values for id, from r.
func orderRow(r *rand.Rand, id int) string {
	note := fmt.Sprintf("'n%d'", r.Intn(50))
	switch r.Intn(9) {
	case 0:
		note = "NULL"
	case 1:
		note = `E'tab\there ''q'' \\ back'`
	}
	ts := fmt.Sprintf("TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL '%d second'", r.Intn(1e6))
	if r.Intn(7) == 0 {
		ts = "NULL"
	}
	return fmt.Sprintf("(%d, %d, %d, %s, %d.%02d, %s, %t)", id, r.Intn(20), r.Intn(2000)-500, note, r.Intn(1000), r.Intn(100), ts, r.Intn(2) == 0)
}

// cdcLoad changes orders at random: one transaction of inserts, updates
// (some of the key), and deletes. ids holds the live ids; next the next new id.
func cdcLoad(ctx context.Context, pg *pgx.Conn, r *rand.Rand, ids map[int]bool, next *int) error {
	tx, err := pg.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	live := make([]int, 0, len(ids))
	for id := range ids {
		live = append(live, id)
	}
	pick := func() int { return live[r.Intn(len(live))] }
	var added, gone []int
	for range 1 + r.Intn(8) {
		var q string
		switch k := r.Intn(10); {
		case k < 4 || len(live) < 10:
			vals := []string{}
			for range 1 + r.Intn(5) {
				vals = append(vals, orderRow(r, *next))
				added = append(added, *next)
				*next++
			}
			q = "INSERT INTO orders VALUES " + strings.Join(vals, ", ")
		case k < 7:
			q = fmt.Sprintf("UPDATE orders SET amount = amount + %d, cust = %d, note = note || 'u' WHERE id = %d", r.Intn(100), r.Intn(20), pick())
		case k < 8:
			id := pick()
			q = fmt.Sprintf("UPDATE orders SET id = %d, price = price + 1 WHERE id = %d", *next, id)
			added, gone = append(added, *next), append(gone, id)
			*next++
		case k < 9:
			q = fmt.Sprintf("UPDATE orders SET amount = -amount WHERE cust = %d", r.Intn(20))
		default:
			id := pick()
			q = fmt.Sprintf("DELETE FROM orders WHERE id = %d", id)
			gone = append(gone, id)
		}
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	for _, id := range gone {
		delete(ids, id)
	}
	for _, id := range added {
		ids[id] = true
	}
	return nil
}

func pgState(err error) string {
	if pe, ok := err.(*pgconn.PgError); ok {
		return pe.Code
	}
	return fmt.Sprint(err)
}

func TestPostgresCDC(t *testing.T) {
	p := startCDCPG(t, "logical")
	pg := p.Conn(t)
	ctx := context.Background()
	r := rand.New(rand.NewSource(32))
	ids := map[int]bool{}
	next := 1
	var vals []string
	for range 300 {
		vals = append(vals, orderRow(r, next))
		ids[next] = true
		next++
	}
	execAll(t, pg, cdcOrders, "INSERT INTO orders VALUES "+strings.Join(vals, ", "),
		"CREATE TABLE nokey (a int, b text)", "CREATE TABLE other (a int PRIMARY KEY)",
		"GRANT SELECT ON orders, nokey, other TO repl",
		"CREATE PUBLICATION pub FOR TABLE orders, nokey, other")
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET checkpoint.interval = '200ms'")

	// CREATE's errors.
	for _, tc := range []struct{ stmt, code string }{
		{"CREATE SOURCE s " + cdcWith(p, "repl", "wrong", "orders", "s_bad", "pub"), "28P01"},
		{"CREATE SOURCE s " + cdcWith(p, "repl", "secret", "orders", "s_bad", "nopub"), "42704"},
		{"CREATE SOURCE s " + cdcWith(p, "repl", "secret", "missing", "s_bad", "pub"), "42P01"},
		{"CREATE SOURCE s " + cdcWith(p, "repl", "secret", "nokey", "s_bad", "pub"), "0A000"},
		{"CREATE SOURCE s (cust int) " + cdcWith(p, "repl", "secret", "orders", "s_bad", "pub"), "42P10"},
		{"CREATE SOURCE s (id bigint, nope int) " + cdcWith(p, "repl", "secret", "orders", "s_bad", "pub"), "42703"},
		{"CREATE SOURCE s (id int) " + cdcWith(p, "repl", "secret", "orders", "s_bad", "pub"), "42804"},
		{"CREATE SOURCE s " + strings.Replace(cdcWith(p, "repl", "secret", "orders", "s_bad", "pub"), "slot.name", "slot_nam", 1), "22023"},
	} {
		_, err := c.Exec(ctx, tc.stmt)
		if got := pgState(err); got != tc.code {
			t.Fatalf("%s: got %s (%v), want %s", tc.stmt, got, err, tc.code)
		}
	}
	var slots int
	if err := pg.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots").Scan(&slots); err != nil || slots != 0 {
		t.Fatalf("failed CREATEs left %d replication slots (%v)", slots, err)
	}

	// Load runs while the source is created: the snapshot and the stream
	// after it must meet with no gap and no overlap.
	load, cancel := context.WithCancel(ctx)
	loadPG := p.Conn(t)
	loaded := make(chan error, 1)
	go func() {
		var err error
		for n := 0; load.Err() == nil && n < 400; n++ {
			if err = cdcLoad(load, loadPG, r, ids, &next); err != nil {
				break
			}
		}
		if load.Err() != nil {
			err = nil
		}
		loaded <- err
	}()
	execAll(t, c, "CREATE SOURCE orders_cdc "+cdcWith(p, "repl", "secret", "orders", "orders_slot", "pub"),
		"CREATE MATERIALIZED VIEW per_cust AS "+fmt.Sprintf(cdcViewQ, "orders_cdc"))
	if _, err := c.Exec(ctx, "INSERT INTO orders_cdc VALUES (1, 1, 1, 'x', 1, now(), true)"); pgState(err) != "42809" {
		t.Fatalf("INSERT into a CDC source: %v, want 42809", err)
	}
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	cancel()
	if rows := sortedRows(t, c, "SHOW SOURCES"); len(rows) != 1 || !strings.HasPrefix(rows[0], "orders_cdc postgres-cdc 1 f ") ||
		!strings.Contains(rows[0], "password = '********'") || strings.Contains(rows[0], "secret") {
		t.Fatalf("SHOW SOURCES: %v", rows)
	}
	waitTargetEquals(t, pg, c, fmt.Sprintf(cdcViewQ, "orders"), "SELECT * FROM per_cust", fmt.Sprintf(cdcViewQ, "orders_cdc"))
	waitTargetEquals(t, pg, c, "SELECT * FROM orders", "SELECT * FROM orders_cdc")
	// Changes to other tables of the publication are not the source's.
	execAll(t, pg, "INSERT INTO other VALUES (1), (2)", "INSERT INTO nokey VALUES (1, 'a')")

	// The slot's confirmed position follows what streamdb stored.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var behind bool
		if err := pg.QueryRow(ctx, "SELECT confirmed_flush_lsn < pg_current_wal_lsn() - 1000000 FROM pg_replication_slots WHERE slot_name = 'orders_slot'").Scan(&behind); err != nil {
			t.Fatal(err)
		}
		if !behind {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot's confirmed_flush_lsn never advanced")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A schema change upstream fails the source with a clear cause.
	execAll(t, pg, "ALTER TABLE orders ADD COLUMN extra int", "UPDATE orders SET extra = 1 WHERE id IN (SELECT id FROM orders LIMIT 1)")
	for deadline := time.Now().Add(30 * time.Second); ; {
		var state, msg string
		err := c.QueryRow(ctx, "SELECT state, coalesce(last_error, '') FROM streamdb_jobs WHERE name = 'orders_cdc'").Scan(&state, &msg)
		if err != nil {
			rows, _ := plainRows(c, "SHOW JOBS")
			t.Fatalf("SHOW JOBS: %v %v", err, rows)
		}
		if state == "FAILED" {
			if !strings.Contains(msg, "changed its columns") || !strings.Contains(msg, "extra") {
				t.Fatalf("failed source's cause: %q", msg)
			}
			t.Logf("schema change: %s", msg)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("source did not fail after a schema change: %s %s", state, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// DROP SOURCE drops the slot.
	execAll(t, c, "DROP SOURCE orders_cdc CASCADE")
	for deadline := time.Now().Add(30 * time.Second); ; {
		if err := pg.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots").Scan(&slots); err != nil {
			t.Fatal(err)
		}
		if slots == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("DROP SOURCE left its replication slot")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPostgresCDCWalLevel: a server without logical decoding is 55000.
func TestPostgresCDCWalLevel(t *testing.T) {
	p := startCDCPG(t, "replica")
	execAll(t, p.Conn(t), cdcOrders, "GRANT SELECT ON orders TO repl", "CREATE PUBLICATION pub FOR TABLE orders")
	srv := StartServer(t, "")
	_, err := srv.Conn(t).Exec(context.Background(), "CREATE SOURCE s "+cdcWith(p, "repl", "secret", "orders", "s1", "pub"))
	if pgState(err) != "55000" || !strings.Contains(err.Error(), "wal_level") {
		t.Fatalf("CREATE SOURCE against wal_level = replica: %v, want 55000", err)
	}
}

// TestPostgresCDCKill9: two upstream clients change orders throughout
// (random transactions, and pgbench-style single-row UPDATEs and DELETEs)
// while a GROUP BY view over the CDC source runs; streamdb dies at two
// failpoints and then by kill -9 five times; the view ends equal to the
// same GROUP BY run by PostgreSQL, and the source to the table.
func TestPostgresCDCKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kill -9 loop")
	}
	p := startCDCPG(t, "logical")
	pg := p.Conn(t)
	ctx := context.Background()
	r := rand.New(rand.NewSource(99))
	ids := map[int]bool{}
	next := 1
	var vals []string
	for range 500 {
		vals = append(vals, orderRow(r, next))
		ids[next] = true
		next++
	}
	execAll(t, pg, cdcOrders, "INSERT INTO orders VALUES "+strings.Join(vals, ", "),
		"GRANT SELECT ON orders TO repl", "CREATE PUBLICATION pub FOR TABLE orders")
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	// Upstream load runs throughout: random transactions of inserts,
	// updates (of the key too) and deletes.
	var stop atomic.Bool
	loaded := make(chan error, 1)
	loadPG := p.Conn(t)
	go func() {
		var err error
		for !stop.Load() && err == nil {
			err = cdcLoad(ctx, loadPG, r, ids, &next)
		}
		loaded <- err
	}()
	// And a pgbench-style client beside it: single-row UPDATEs and
	// DELETEs of random ids, each its own transaction (a row the other
	// client does not hold any more is a no-op; one statement locks one
	// row, so the two never deadlock).
	benchPG := p.Conn(t)
	benched := make(chan error, 1)
	go func() {
		r2 := rand.New(rand.NewSource(100))
		var err error
		for !stop.Load() && err == nil {
			id := 1 + r2.Intn(3000)
			q := fmt.Sprintf("UPDATE orders SET amount = amount + %d, note = note || 'p' WHERE id = %d", 1+r2.Intn(9), id)
			if r2.Intn(20) == 0 {
				q = fmt.Sprintf("DELETE FROM orders WHERE id = %d", id)
			}
			_, err = benchPG.Exec(ctx, q)
		}
		benched <- err
	}()
	// Two processes die at failpoints: right after a transaction was read
	// from the slot, before it is stored (the restart must read it again:
	// nothing lost), and right after it was stored, before the slot hears
	// of it (the restart gets it again and must skip it: nothing twice).
	dir := ""
	var srv *Server
	for i, fp := range []string{"orders_cdc:cdc_received:20:kill", "orders_cdc:cdc_stored:20:kill"} {
		srv = startServer(t, bin, []string{"STREAMDB_FAILPOINTS=" + fp}, dir)
		dir = srv.DataDir()
		if i == 0 {
			execAll(t, srv.Conn(t), "SET checkpoint.interval = '200ms'",
				"CREATE SOURCE orders_cdc "+cdcWith(p, "repl", "secret", "orders", "orders_slot", "pub"),
				"CREATE MATERIALIZED VIEW per_cust AS "+fmt.Sprintf(cdcViewQ, "orders_cdc"))
		}
		for deadline := time.Now().Add(60 * time.Second); srv.running() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if srv.running() {
			t.Fatalf("failpoint %s did not kill streamdb", fp)
		}
	}
	// Then kill -9 at moments the test picks, five times.
	srv = StartServer(t, dir)
	for round := 0; round < 5; round++ {
		time.Sleep(time.Duration(500+300*round) * time.Millisecond)
		srv.Kill9()
		time.Sleep(100 * time.Millisecond)
		srv.Restart(t)
	}
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if err := <-benched; err != nil {
		t.Fatal(err)
	}
	c := srv.Conn(t)
	waitTargetEquals(t, pg, c, fmt.Sprintf(cdcViewQ, "orders"), "SELECT * FROM per_cust", fmt.Sprintf(cdcViewQ, "orders_cdc"))
	waitTargetEquals(t, pg, c, "SELECT * FROM orders", "SELECT * FROM orders_cdc")
}

// TestPostgresCDCKillDuringCreate: streamdb killed -9 while CREATE SOURCE
// streams the snapshot (after its first batch is stored) leaves a
// replication slot upstream; the next start drops it with the unfinished
// source, so the same CREATE SOURCE runs again and the source equals the
// table. The snapshot (three batches) is stored batch by batch.
func TestPostgresCDCKillDuringCreate(t *testing.T) {
	p := startCDCPG(t, "logical")
	pg := p.Conn(t)
	r := rand.New(rand.NewSource(7))
	var vals []string
	for id := 1; id <= 10000; id++ {
		vals = append(vals, orderRow(r, id))
	}
	execAll(t, pg, cdcOrders, "INSERT INTO orders VALUES "+strings.Join(vals, ", "),
		"GRANT SELECT ON orders TO repl", "CREATE PUBLICATION pub FOR TABLE orders")
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	create := "CREATE SOURCE orders_cdc " + cdcWith(p, "repl", "secret", "orders", "orders_slot", "pub")
	slots := func() string {
		var n string
		if err := pg.QueryRow(context.Background(), "SELECT count(*)::text FROM pg_replication_slots WHERE slot_name = 'orders_slot'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	srv := startServer(t, bin, []string{"STREAMDB_FAILPOINTS=orders_cdc:cdc_snapshot:1:kill"}, "")
	if _, err := srv.Conn(t).Exec(context.Background(), create); err == nil {
		t.Fatal("CREATE SOURCE returned although streamdb was killed during it")
	}
	for deadline := time.Now().Add(30 * time.Second); srv.running() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if srv.running() {
		t.Fatal("the failpoint did not kill streamdb")
	}
	if got := slots(); got != "1" {
		t.Fatalf("slots after the kill: %s, want the orphan 1", got)
	}
	// Restarted: the same CREATE SOURCE succeeds (the unfinished source and
	// its slot are dropped at start, or by the CREATE itself).
	srv = StartServer(t, srv.DataDir())
	c := srv.Conn(t)
	execAll(t, c, create, "CREATE MATERIALIZED VIEW per_cust AS "+fmt.Sprintf(cdcViewQ, "orders_cdc"))
	if got := slots(); got != "1" {
		t.Fatalf("slots after the second CREATE: %s, want 1", got)
	}
	execAll(t, pg, "UPDATE orders SET amount = amount + 1 WHERE id % 7 = 0", "DELETE FROM orders WHERE id % 11 = 0")
	waitTargetEquals(t, pg, c, fmt.Sprintf(cdcViewQ, "orders"), "SELECT * FROM per_cust", fmt.Sprintf(cdcViewQ, "orders_cdc"))
	waitTargetEquals(t, pg, c, "SELECT * FROM orders", "SELECT * FROM orders_cdc")
	// Another source on the same slot: 42710, and nothing is left of it.
	_, err = c.Exec(context.Background(), "CREATE SOURCE other "+cdcWith(p, "repl", "secret", "orders", "orders_slot", "pub"))
	wantErr(t, "a slot in use", err, "42710", `replication slot "orders_slot" already exists`)
	if _, err := c.Exec(context.Background(), "SELECT * FROM other LIMIT 1"); err == nil || !strings.Contains(err.Error(), "42P01") {
		t.Fatalf("the refused source exists: %v", err)
	}
	execAll(t, c, "DROP MATERIALIZED VIEW per_cust", "DROP SOURCE orders_cdc")
	for deadline := time.Now().Add(30 * time.Second); slots() != "0"; {
		if time.Now().After(deadline) {
			t.Fatal("DROP SOURCE left the slot")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
