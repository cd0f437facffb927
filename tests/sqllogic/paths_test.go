package sqllogic

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// sqlState runs stmt and returns the SQLSTATE it failed with ("" on success).
func sqlState(t *testing.T, c *pgx.Conn, stmt string) string {
	t.Helper()
	_, err := c.Exec(context.Background(), stmt)
	if err == nil {
		return ""
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("%s: %v (not a server error)", stmt, err)
	}
	return pe.Code
}

// TestSavepointNamesCannotEscape: every statement that turns a savepoint
// name into a path refuses names that are not plain directory names (42602),
// so no quoted identifier can reach a file outside the storage location.
// DROP SAVEPOINT "../../victim" used to delete the directory.
func TestSavepointNamesCannotEscape(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.MkdirAll(filepath.Join(victim, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(victim, "manifest.json"), []byte(`{"format_version":1}`), 0o644)
	srv := StartServer(t, filepath.Join(dir, "data"))
	c := srv.Conn(t)
	execAll(t, c,
		"CREATE TABLE ev (k BIGINT, v BIGINT)",
		"INSERT INTO ev VALUES (1, 10), (2, 20)",
		"CREATE MATERIALIZED VIEW per_k AS SELECT k, sum(v) AS s FROM ev GROUP BY k",
		"CREATE SAVEPOINT good_one")

	// The savepoints live in <data>/savepoints/<name>: "../../victim" is the
	// victim directory, and the absolute path names it too.
	names := []string{
		`"../../victim"`, `"..\..\victim"`, `".."`, `"."`, `"../x"`, `"a/b"`,
		`"` + victim + `"`, `"/abs"`, `"Good_One"`, `"with space"`, `"é"`, `""`,
		`"` + strings.Repeat("a", 64) + `"`, `"` + strings.Repeat("../", 400) + `etc"`,
		`"nul` + "\u0001" + `"`,
	}
	stmts := []string{
		"CREATE SAVEPOINT %s",
		"DROP SAVEPOINT %s",
		"DROP SAVEPOINT IF EXISTS %s",
		"RESTORE FROM SAVEPOINT %s",
		"RESTORE per_k FROM SAVEPOINT %s",
		"SELECT * FROM per_k AS OF SAVEPOINT %s",
		"STOP JOB per_k WITH SAVEPOINT %s",
		"CREATE OR REPLACE MATERIALIZED VIEW per_k AS SELECT k, sum(v) AS s FROM ev GROUP BY k FROM SAVEPOINT %s",
	}
	for _, name := range names {
		for _, form := range stmts {
			stmt := strings.Replace(form, "%s", name, 1)
			code := sqlState(t, c, stmt)
			if code == "42601" && (name == `""` || strings.Contains(name, "\u0001")) {
				continue // the parser already refuses a zero-length or control-character identifier
			}
			if code != "42602" {
				t.Errorf("%.120s: SQLSTATE %q, want 42602", stmt, code)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(victim, "manifest.json")); err != nil {
		t.Fatalf("the victim directory outside the data directory was touched: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(srv.DataDir(), "savepoints"))
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != "good_one" {
		t.Errorf("savepoints directory holds %v, want only good_one", got)
	}
	// START JOB ... FROM SAVEPOINT: the job must be stopped first.
	execAll(t, c, "STOP JOB per_k")
	if code := sqlState(t, c, `START JOB per_k FROM SAVEPOINT "../../victim"`); code != "42602" {
		t.Errorf("START JOB FROM SAVEPOINT ../../victim: %q, want 42602", code)
	}
	// Valid names still work end to end, and the view is intact.
	execAll(t, c, "START JOB per_k FROM SAVEPOINT good_one", "DROP SAVEPOINT good_one", "CREATE SAVEPOINT a_2_z")
	if rows := rowSet(t, c, "SELECT k, s FROM per_k"); rows != rowSet(t, c, "SELECT k, sum(v) FROM ev GROUP BY k") {
		t.Errorf("per_k = %s after the refused statements", rows)
	}
}

// TestCheckpointDirFixedByConfig: SET checkpoint.dir chooses only among
// the storage locations of the config file (42501 otherwise), and
// checkpoint.dirs cannot be set from SQL at all.
func TestCheckpointDirFixedByConfig(t *testing.T) {
	dir := t.TempDir()
	allowed, other := filepath.Join(dir, "snap-a"), filepath.Join(dir, "snap-b")
	conf := filepath.Join(dir, "streamdb.toml")
	os.WriteFile(conf, []byte("[checkpoint]\ndirs = [\""+allowed+"\"]\ninterval = \"off\"\n"), 0o644)
	evil := filepath.Join(dir, "evil")
	srv := StartServer(t, filepath.Join(dir, "data"), "--config", conf)
	c := srv.Conn(t)
	for _, stmt := range []string{
		"SET checkpoint.dir = '" + evil + "'",
		"SET checkpoint.dir = 'file://" + evil + "'",
		"SET checkpoint.dir = '/etc/streamdb-evil'",
		"SET checkpoint.dir = '" + allowed + "/../evil'",
		"SET checkpoint.dir = '" + other + "'",
	} {
		if code := sqlState(t, c, stmt); code != "42501" {
			t.Errorf("%s: SQLSTATE %q, want 42501", stmt, code)
		}
	}
	if code := sqlState(t, c, "SET checkpoint.dirs = '"+evil+"'"); code != "55P02" {
		t.Errorf("SET checkpoint.dirs: %q, want 55P02", code)
	}
	execAll(t, c,
		"SET checkpoint.dir = '"+allowed+"'",
		"CREATE TABLE s (x BIGINT)",
		"CREATE MATERIALIZED VIEW n AS SELECT count(*) AS c FROM s",
		"INSERT INTO s VALUES (1)",
		"CHECKPOINT",
		"CREATE SAVEPOINT sp")
	if _, err := os.Stat(filepath.Join(allowed, "savepoints", "sp", "manifest.json")); err != nil {
		t.Errorf("the savepoint is not in the allowed location: %v", err)
	}
	if _, err := os.Stat(evil); err == nil {
		t.Errorf("%s was created", evil)
	}
	execAll(t, c, "RESET checkpoint.dir")
	if got := show(t, srv, "checkpoint.dir"); got != "" {
		t.Errorf("after RESET: %q", got)
	}
}
