package sqllogic

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// python3WithModules finds a Python 3 that imports mods (the system one
// first: Debian's python3-psycopg2 and python3-sqlalchemy install there,
// and a pyenv shim may come first on PATH). Without one the test is
// skipped, unless CI is set.
func python3WithModules(t *testing.T, mods ...string) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import "+strings.Join(mods, ", ")).Run() == nil {
			return path
		}
	}
	msg := "python3 with " + strings.Join(mods, ", ") + " is not installed (Debian: python3-psycopg2 python3-sqlalchemy)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestDriverIntrospection lists the streams, views and columns through
// psycopg2 and SQLAlchemy's inspect(), the way ORMs and BI tools do on
// connect.
func TestDriverIntrospection(t *testing.T) {
	py := python3WithModules(t, "psycopg2", "sqlalchemy")
	srv := StartServer(t, "")
	c := srv.Conn(t)
	for _, stmt := range strings.Split(catalogSchema, ";\n") {
		if _, err := c.Exec(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	host, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "drivers", "introspect.py"), host, port)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PGPASSFILE=/dev/null")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("introspect.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	want := `psycopg2 tables [('word_counts', 'VIEW'), ('words', 'BASE TABLE')]
psycopg2 columns [('word', 'character varying'), ('n', 'bigint'), ('price', 'numeric'), ('small', 'integer'), ('ts', 'timestamp without time zone')]
psycopg2 attributes [('word', 'character varying(20)'), ('c', 'bigint')]
sqlalchemy tables ['words']
sqlalchemy views ['word_counts']
sqlalchemy schemas ['information_schema', 'public']
sqlalchemy columns words [('word', 'VARCHAR(20)', True, None), ('n', 'BIGINT', True, None), ('price', 'NUMERIC(10, 2)', True, None), ('small', 'INTEGER', True, None), ('ts', 'TIMESTAMP', True, None)]
sqlalchemy columns word_counts [('word', 'VARCHAR(20)', True, None), ('c', 'BIGINT', True, None)]
sqlalchemy pk words None []
sqlalchemy pk word_counts word_counts_pkey ['word']
`
	if got := stdout.String(); got != want {
		t.Errorf("introspect.py printed:\n%s\nwant:\n%s\nstderr:\n%s", got, want, stderr.String())
	}
}

// pgjdbcJar is Debian's pgjdbc (libpostgresql-jdbc-java).
const pgjdbcJar = "/usr/share/java/postgresql.jar"

// TestJDBCMetaData lists the streams, views and columns through pgjdbc's
// DatabaseMetaData.getTables and getColumns, and the views' keys through
// getPrimaryKeys (whose query selects (information_schema._pg_expandarray(i.indkey)).n
// and (result.KEYS).x: records through a subquery), and the same keys as
// indexes through getIndexInfo (trim(both '"' from ...), indoption[k] & 1::smallint).
func TestJDBCMetaData(t *testing.T) {
	java, err := exec.LookPath("java")
	if _, statErr := os.Stat(pgjdbcJar); err != nil || statErr != nil {
		msg := "java and pgjdbc are not installed (Debian: default-jre-headless libpostgresql-jdbc-java)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	// by_small_word's key (word, small) is not in column order.
	for _, stmt := range append(strings.Split(catalogSchema, ";\n"),
		"CREATE MATERIALIZED VIEW by_small_word AS SELECT count(*) AS c, small, word FROM words GROUP BY word, small") {
		if _, err := c.Exec(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	host, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "-cp", pgjdbcJar, filepath.Join("testdata", "drivers", "Introspect.java"), host, port)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("Introspect.java: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	want := `table public by_small_word MATERIALIZED VIEW
table public word_counts MATERIALIZED VIEW
table public words TABLE
column word_counts 1 word varchar 12 20 YES
column word_counts 2 c int8 -5 19 YES
column words 1 word varchar 12 20 YES
column words 2 n int8 -5 19 YES
column words 3 price numeric 2 10 YES
column words 4 small int4 4 10 YES
column words 5 ts timestamp 93 29 YES
pk word_counts 1 word word_counts_pkey
pk by_small_word 1 word by_small_word_pkey
pk by_small_word 2 small by_small_word_pkey
pk words none
index word_counts word_counts_pkey false 3 1 word A
index by_small_word by_small_word_pkey false 3 1 word A
index by_small_word by_small_word_pkey false 3 2 small A
index words none
`
	if got := stdout.String(); got != want {
		t.Errorf("Introspect.java printed:\n%s\nwant:\n%s\nstderr:\n%s", got, want, stderr.String())
	}
}
