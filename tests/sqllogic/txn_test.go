package sqllogic

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func countOf(t *testing.T, c *pgx.Conn, query string) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// psqlScript runs psql with the script on stdin (psql sends each
// statement as its own Query) or, with -c, as one Query message.
func psqlScript(t *testing.T, srv *Server, stdin string, args ...string) string {
	t.Helper()
	host, port := splitAddr(srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", append([]string{"-X", "-h", host, "-p", port, "-U", "streamdb", "streamdb"}, args...)...)
	cmd.Env = append(cmd.Environ(), "LC_ALL=C", "PAGER=", "PSQLRC=/dev/null", "PGSSLMODE=disable")
	cmd.Stdin = strings.NewReader(stdin)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func splitAddr(addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	return addr[:i], addr[i+1:]
}

// TestTxnPsql: in psql, ROLLBACK drops a block's INSERT and COPY, COMMIT
// appends them, and a Query message of several statements is one
// transaction: its third statement's error drops the first two's rows.
func TestTxnPsql(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql not installed")
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (x BIGINT, s TEXT)", "CREATE TABLE u (x BIGINT)")
	out := psqlScript(t, srv, `BEGIN;
INSERT INTO t VALUES (1, 'a'), (2, 'b');
COPY t FROM STDIN;
3	c
4	d
\.
ROLLBACK;
`)
	if !strings.Contains(out, "COPY 2") || !strings.Contains(out, "ROLLBACK") {
		t.Fatalf("psql output:\n%s", out)
	}
	if n := countOf(t, c, "SELECT count(*) FROM t"); n != 0 {
		t.Fatalf("after ROLLBACK: %d rows, want 0", n)
	}
	out = psqlScript(t, srv, "BEGIN;\nINSERT INTO t VALUES (1, 'a');\nCOPY t FROM STDIN;\n3\tc\n\\.\nCOMMIT;\n")
	if n := countOf(t, c, "SELECT count(*) FROM t"); n != 2 {
		t.Fatalf("after COMMIT: %d rows, want 2; psql:\n%s", n, out)
	}
	out = psqlScript(t, srv, "", "-c", "INSERT INTO t VALUES (10, 'x'); INSERT INTO u VALUES (10); INSERT INTO nosuch VALUES (1)")
	if !strings.Contains(out, `relation "nosuch" does not exist`) {
		t.Fatalf("psql output:\n%s", out)
	}
	if n := countOf(t, c, "SELECT count(*) FROM t WHERE x = 10") + countOf(t, c, "SELECT count(*) FROM u"); n != 0 {
		t.Fatalf("a failed multi-statement message left %d rows of its earlier INSERTs", n)
	}
	psqlScript(t, srv, "", "-c", "INSERT INTO t VALUES (10, 'x'); INSERT INTO u VALUES (10)")
	if n := countOf(t, c, "SELECT count(*) FROM t WHERE x = 10") + countOf(t, c, "SELECT count(*) FROM u"); n != 2 {
		t.Fatalf("a multi-statement message committed %d rows, want 2", n)
	}
	// A read inside a message sees the message's writes before it.
	out = psqlScript(t, srv, "", "-At", "-c", "INSERT INTO u VALUES (11); SELECT count(*) FROM u")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); lines[len(lines)-1] != "2" {
		t.Fatalf("read after a write in one message: %q, want 2", out)
	}
	// A session that ends inside a block leaves nothing.
	psqlScript(t, srv, "1\n2\n", "-c", "BEGIN; COPY u FROM STDIN")
	if n := countOf(t, c, "SELECT count(*) FROM u"); n != 2 {
		t.Fatalf("an unfinished block's COPY was appended: %d rows, want 2", n)
	}
}

// TestTxnStates: the codes of a block: 25P02 after an error until ROLLBACK
// (COMMIT then rolls back), 25001 for DDL, 25000 for a read after the
// block's writes; SET is undone by ROLLBACK.
func TestTxnStates(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE t (x BIGINT NOT NULL)")

	execAll(t, c, "BEGIN", "INSERT INTO t VALUES (1)")
	_, err := c.Exec(ctx, "INSERT INTO t VALUES (NULL)")
	wantCode(t, "NULL into a NOT NULL column", err, "23502")
	_, err = c.Exec(ctx, "SELECT 1")
	wantCode(t, "statement after an error in a block", err, "25P02")
	tag, err := c.Exec(ctx, "COMMIT")
	if err != nil || tag.String() != "ROLLBACK" {
		t.Fatalf("COMMIT of a failed block: %v %q, want tag ROLLBACK", err, tag)
	}
	if n := countOf(t, c, "SELECT count(*) FROM t"); n != 0 {
		t.Fatalf("a failed block appended %d rows", n)
	}

	for _, ddl := range []string{
		"CREATE TABLE t2 (x BIGINT)",
		"CREATE MATERIALIZED VIEW v AS SELECT count(*) FROM t",
		"DROP TABLE t",
		"CHECKPOINT",
		"SET checkpoint.interval = '5s'",
	} {
		execAll(t, c, "BEGIN")
		_, err = c.Exec(ctx, ddl)
		pe := wantCode(t, ddl+" in a block", err, "25001")
		if !strings.Contains(pe.Message, "cannot run inside a transaction block") {
			t.Errorf("%s: message %q", ddl, pe.Message)
		}
		execAll(t, c, "ROLLBACK")
	}
	if _, ok := tableExists(t, c, "t2"); ok {
		t.Fatal("CREATE TABLE in a block was run")
	}

	execAll(t, c, "BEGIN", "SELECT count(*) FROM t", "INSERT INTO t VALUES (1)")
	_, err = c.Exec(ctx, "SELECT count(*) FROM t")
	wantCode(t, "read after a write in a block", err, "25000")
	execAll(t, c, "ROLLBACK")

	execAll(t, c, "BEGIN", "SET application_name = 'inside'", "ROLLBACK")
	if got := showOn(t, c, "application_name"); got == "inside" {
		t.Errorf("ROLLBACK kept SET application_name")
	}
	if n := countOf(t, c, "SELECT count(*) FROM t"); n != 0 {
		t.Fatalf("rows after ROLLBACKs: %d", n)
	}
}

func tableExists(t *testing.T, c *pgx.Conn, name string) (string, bool) {
	t.Helper()
	rows, err := c.Query(context.Background(), "SHOW TABLES")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == name {
			return n, true
		}
	}
	return "", false
}

// TestTxnAtomicCommit: writers commit blocks of INSERTs and a COPY into two
// streams while a reader reads both streams and two views over them: every
// read sees each transaction whole or not at all (the counts stay
// multiples of a transaction's rows, and equal across the two streams).
func TestTxnAtomicCommit(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	execAll(t, c, "SET checkpoint.interval = '100ms'",
		"CREATE TABLE a (x BIGINT)", "CREATE TABLE b (x BIGINT)",
		"CREATE MATERIALIZED VIEW va AS SELECT count(*) AS n FROM a",
		"CREATE MATERIALIZED VIEW vb AS SELECT count(*) AS n FROM b")
	const writers, txns, perTx = 3, 15, 6 // per stream: 3 INSERTs of 1 row, a COPY of 3
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			wc, err := pgx.Connect(ctx, srv.ConnString())
			if err != nil {
				errs <- err
				return
			}
			defer wc.Close(ctx)
			for i := 0; i < txns; i++ {
				if _, err := wc.Exec(ctx, "BEGIN"); err != nil {
					errs <- err
					return
				}
				for _, tab := range []string{"a", "b"} {
					for k := 0; k < 3; k++ {
						if _, err := wc.Exec(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%d)", tab, w*1000+i)); err != nil {
							errs <- err
							return
						}
					}
					if _, err := wc.PgConn().CopyFrom(ctx, strings.NewReader("1\n2\n3\n"), "COPY "+tab+" FROM STDIN"); err != nil {
						errs <- err
						return
					}
				}
				if _, err := wc.Exec(ctx, "COMMIT"); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	reads := 0
	check := func() {
		var na, nb int64
		var pa, pb *int64
		if err := c.QueryRow(ctx, "SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b)").Scan(&na, &nb); err != nil {
			t.Fatal(err)
		}
		if na != nb || na%perTx != 0 {
			t.Fatalf("a statement saw %d rows of a and %d of b: part of a transaction", na, nb)
		}
		if err := c.QueryRow(ctx, "SELECT (SELECT n FROM va), (SELECT n FROM vb)").Scan(&pa, &pb); err != nil {
			t.Fatal(err)
		}
		var va, vb int64 // a view over an empty stream has no row yet
		if pa != nil {
			va = *pa
		}
		if pb != nil {
			vb = *pb
		}
		if va != vb || va%perTx != 0 {
			t.Fatalf("the views count %d rows of a and %d of b: part of a transaction", va, vb)
		}
		reads++
	}
loop:
	for {
		select {
		case <-done:
			break loop
		default:
			check()
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := int64(writers * txns * perTx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		check()
		var va int64
		c.QueryRow(ctx, "SELECT n FROM va").Scan(&va)
		if va == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("view va counts %d, want %d", va, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d consistent reads during %d concurrent transactions", reads, writers*txns)
}

// TestTxnLargeCopy: a COPY larger than the in-memory buffer inside a block
// is staged, not held; ROLLBACK leaves nothing and COMMIT appends it all.
func TestTxnLargeCopy(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	execAll(t, c, "CREATE TABLE big (x BIGINT, s TEXT)")
	const rows = 300000 // about 20 MB of input: past the 8 MB kept in memory
	var sb strings.Builder
	pad := strings.Repeat("p", 60)
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&sb, "%d\t%s\n", i, pad)
	}
	data := sb.String()
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		execAll(t, c, "BEGIN", "INSERT INTO big VALUES (-1, 'x')")
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), "COPY big FROM STDIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), "COPY big FROM STDIN"); err != nil {
			t.Fatal(err)
		}
		execAll(t, c, end)
	}
	if n := countOf(t, c, "SELECT count(*) FROM big"); n != 2*rows+1 {
		t.Fatalf("after ROLLBACK then COMMIT: %d rows, want %d", n, 2*rows+1)
	}
}

// TestSettingsHonest: SET refuses the values of settings that change how
// values are read or printed which streamdb does not implement (22023),
// and accepts the ones it does.
func TestSettingsHonest(t *testing.T) {
	srv := StartServer(t, "")
	ctx := context.Background()
	c := srv.Conn(t)
	for _, bad := range []string{
		"SET standard_conforming_strings = off",
		"SET extra_float_digits = 0",
		"SET extra_float_digits = -3",
		"SET DateStyle = 'German'",
		"SET DateStyle = 'ISO, DMY'",
		"SET IntervalStyle = 'iso_8601'",
	} {
		_, err := c.Exec(ctx, bad)
		wantCode(t, bad, err, "22023")
	}
	for _, ok := range []string{
		"SET standard_conforming_strings = on",
		"SET extra_float_digits = 3",
		"SET extra_float_digits = 1",
		"SET DateStyle = 'ISO'",
		"SET DateStyle = 'ISO, MDY'",
		"SET IntervalStyle = 'postgres'",
	} {
		execAll(t, c, ok)
	}
	if got := showOn(t, c, "standard_conforming_strings"); got != "on" {
		t.Errorf("standard_conforming_strings = %q", got)
	}
	var s string
	if err := c.QueryRow(ctx, `SELECT 'a\b'`).Scan(&s); err != nil || s != `a\b` {
		t.Errorf(`'a\b' reads as %q (%v)`, s, err)
	}
	// Drivers' startup parameters still connect (JDBC sends extra_float_digits=3, DateStyle=ISO).
	c2, err := connParams(t, srv, map[string]string{"extra_float_digits": "3", "DateStyle": "ISO", "IntervalStyle": "iso_8601"})
	if err != nil {
		t.Fatalf("connect with JDBC's startup parameters: %v", err)
	}
	if got := c2.PgConn().ParameterStatus("IntervalStyle"); got != "postgres" {
		t.Errorf("IntervalStyle reported as %q, want postgres", got)
	}
}
