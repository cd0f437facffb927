package sqllogic

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// psqlTarget is a server the real psql binary talks to.
type psqlTarget struct {
	host, port string
	env        []string // extra environment for psql
}

// newPsqlTarget finds psql and a server: STREAMDB_TEST_ADDR (then a fresh
// schema isolates the test's tables) or a new streamdb. Without psql the test
// is skipped, unless CI is set, where psql is required.
func newPsqlTarget(t *testing.T) *psqlTarget {
	t.Helper()
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("psql is required in CI (install postgresql-client): %v", err)
		}
		t.Skip("psql is not installed")
	}
	addr := externalAddr()
	var env []string
	if addr == "" {
		addr = StartServer(t, "").Addr()
	} else {
		schema := "psql_" + strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, ConnString(addr))
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS %[1]s CASCADE; CREATE SCHEMA %[1]s", schema))
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, "PGOPTIONS=-c search_path="+schema)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("psql needs a host:port address, got %q: %v", addr, err)
	}
	return &psqlTarget{host: host, port: port, env: env}
}

// psqlResult is what one psql run printed and its exit code.
type psqlResult struct {
	stdout, stderr string
	code           int
}

// run runs psql -X against the target with args, feeding stdin.
func (p *psqlTarget) run(t *testing.T, stdin string, args ...string) psqlResult {
	t.Helper()
	r := RunPsql(t, p.host, p.port, p.env, stdin, args...)
	return psqlResult{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

func TestPsql(t *testing.T) {
	p := newPsqlTarget(t)

	t.Run("command", func(t *testing.T) {
		res := p.run(t, "", "-c", "SELECT 1 + 1 AS two, 'x' AS letter, NULL::int AS nothing, 7 / 2 AS half")
		want := ` two | letter | nothing | half 
-----+--------+---------+------
   2 | x      |         |    3
(1 row)

`
		if res.code != 0 || res.stdout != want || res.stderr != "" {
			t.Errorf("psql -c: exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", res.code, res.stdout, want, res.stderr)
		}
	})

	t.Run("unaligned", func(t *testing.T) {
		res := p.run(t, "", "-At", "-c", "SELECT 'a' AS x, 2.50 AS y, true AS z, DATE '2026-01-02' AS d")
		if want := "a|2.50|t|2026-01-02\n"; res.code != 0 || res.stdout != want {
			t.Errorf("psql -At -c: exit %d, stdout %q, want %q; stderr %q", res.code, res.stdout, want, res.stderr)
		}
	})

	t.Run("command error", func(t *testing.T) {
		res := p.run(t, "", "-c", "SELECT 1 / 0")
		if res.code != 1 || !strings.Contains(res.stderr, "ERROR:  division by zero") {
			t.Errorf("psql -c 'SELECT 1 / 0': exit %d (want 1), stderr %q", res.code, res.stderr)
		}
	})

	t.Run("script", func(t *testing.T) {
		script := `CREATE TABLE psql_words (word VARCHAR, n BIGINT, ts TIMESTAMP);
INSERT INTO psql_words VALUES ('hello', 1, '2026-01-01 00:00:00'), ('world', 2, NULL);
COPY psql_words FROM STDIN;
copy	3	2026-01-02 03:04:05
\N	4	\N
back\\slash	5	2026-01-03 00:00:00.5
\.
COPY psql_words FROM STDIN (FORMAT csv, HEADER true);
word,n,ts
csv,6,2026-01-04 00:00:00
"quoted, comma",7,
"",8,2026-01-05 00:00:00
\.
SELECT word, n, ts FROM psql_words ORDER BY n;
SELECT count(*) AS rows, sum(n) AS total, count(ts) AS with_ts FROM psql_words;
SELECT 1 AS one; SELECT 2 AS two;
`
		want := `CREATE TABLE
INSERT 0 2
COPY 3
COPY 3
     word      | n |          ts           
---------------+---+-----------------------
 hello         | 1 | 2026-01-01 00:00:00
 world         | 2 | 
 copy          | 3 | 2026-01-02 03:04:05
               | 4 | 
 back\slash    | 5 | 2026-01-03 00:00:00.5
 csv           | 6 | 2026-01-04 00:00:00
 quoted, comma | 7 | 
               | 8 | 2026-01-05 00:00:00
(8 rows)

 rows | total | with_ts 
------+-------+---------
    8 |    36 |       5
(1 row)

 one 
-----
   1
(1 row)

 two 
-----
   2
(1 row)

`
		res := p.run(t, script, "-v", "ON_ERROR_STOP=1")
		if res.code != 0 || res.stdout != want || res.stderr != "" {
			t.Errorf("piped script: exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", res.code, res.stdout, want, res.stderr)
		}
	})

	t.Run("copy bad row", func(t *testing.T) {
		script := `\set VERBOSITY verbose
CREATE TABLE psql_copy (id BIGINT NOT NULL, name TEXT);
COPY psql_copy FROM STDIN;
1	one
2	two
three	3
4	four
\.
SELECT count(*) AS stored FROM psql_copy;
`
		res := p.run(t, script)
		// Without ON_ERROR_STOP psql goes on; the whole COPY was rejected.
		wantOut := "CREATE TABLE\n stored \n--------\n      0\n(1 row)\n\n"
		if res.code != 0 || res.stdout != wantOut {
			t.Errorf("exit %d\nstdout:\n%s\nwant:\n%s", res.code, res.stdout, wantOut)
		}
		for _, want := range []string{`ERROR:  22P02: invalid input syntax for type bigint: "three"`, "line 3"} {
			if !strings.Contains(res.stderr, want) {
				t.Errorf("stderr does not contain %q:\n%s", want, res.stderr)
			}
		}
	})

	t.Run("on error stop", func(t *testing.T) {
		script := `\set VERBOSITY verbose
SELECT 1 AS one;
SELECT * FROM psql_no_such_table;
SELECT 2 AS two;
`
		res := p.run(t, script, "-v", "ON_ERROR_STOP=1")
		// psql exits 3 when a script stops on an error.
		if res.code != 3 {
			t.Errorf("exit code %d, want 3; stderr:\n%s", res.code, res.stderr)
		}
		if want := " one \n-----\n   1\n(1 row)\n\n"; res.stdout != want {
			t.Errorf("stdout:\n%s\nwant (nothing after the error):\n%s", res.stdout, want)
		}
		if want := `ERROR:  42P01: relation "psql_no_such_table" does not exist`; !strings.Contains(res.stderr, want) {
			t.Errorf("stderr does not contain %q:\n%s", want, res.stderr)
		}
	})

	t.Run("syntax error sqlstate", func(t *testing.T) {
		res := p.run(t, "\\set VERBOSITY verbose\nSELEC 1;\n", "-v", "ON_ERROR_STOP=1")
		if res.code != 3 || !strings.Contains(res.stderr, "ERROR:  42601: syntax error") {
			t.Errorf("exit %d (want 3), stderr:\n%s", res.code, res.stderr)
		}
	})
}
