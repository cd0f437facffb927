package sqllogic

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestKeyedPrivilegesPG checks UPDATE and DELETE privileges on a table
// with a primary key against PostgreSQL 15: for each set of privileges
// granted to a role, every write and read the role tries gets the same
// outcome (success or the same SQLSTATE) on both servers, and the table
// ends the same.
func TestKeyedPrivilegesPG(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a differential volume test of types and statements, run in the plain step")
	}
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, c := range []*pgx.Conn{sdb, pgc} {
		for _, s := range []string{
			"CREATE TABLE kt (k INT PRIMARY KEY, v INT)",
			"CREATE TABLE other (x INT)",
			"INSERT INTO other VALUES (1), (2)",
			"CREATE ROLE alice LOGIN PASSWORD 'pw'",
		} {
			if err := keyedExec(c, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	alice := mustConnAs(t, srv, "alice", "pw")
	pgAlice, err := pgx.Connect(t.Context(), "postgres://alice@"+pg.addr+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pgAlice.Close(t.Context())

	grants := []string{"", "UPDATE", "UPDATE, SELECT", "DELETE", "DELETE, SELECT", "INSERT",
		"INSERT, UPDATE", "INSERT, UPDATE, SELECT", "SELECT", "ALL"}
	writes := []string{
		"UPDATE kt SET v = 7",
		"UPDATE kt SET v = v + 1",
		"UPDATE kt SET v = 2 WHERE k = 1",
		"UPDATE kt SET v = k * 2",
		"DELETE FROM kt WHERE k = 3",
		"DELETE FROM kt WHERE k IN (SELECT x FROM other)",
		"INSERT INTO kt VALUES (10, 10)",
		"INSERT INTO kt VALUES (1, 5) ON CONFLICT DO NOTHING",
		"INSERT INTO kt VALUES (1, 5) ON CONFLICT (k) DO NOTHING",
		"INSERT INTO kt VALUES (1, 5) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
		"INSERT INTO kt VALUES (2, 5) ON CONFLICT (k) DO UPDATE SET v = kt.v + EXCLUDED.v",
		"UPDATE kt SET v = 7 RETURNING k",
		"INSERT INTO kt VALUES (11, 1) RETURNING k",
		"SELECT count(*) FROM kt",
		"DELETE FROM kt",
	}
	for _, g := range grants {
		for _, c := range []*pgx.Conn{sdb, pgc} {
			for _, s := range []string{"REVOKE ALL ON kt FROM alice", "GRANT SELECT ON other TO alice",
				"DELETE FROM kt", "INSERT INTO kt VALUES (1, 1), (2, 2), (3, 3)"} {
				if err := keyedExec(c, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			if g != "" {
				if err := keyedExec(c, "GRANT "+g+" ON kt TO alice"); err != nil {
					t.Fatalf("GRANT %s: %v", g, err)
				}
			}
		}
		for _, priv := range []string{"SELECT", "INSERT", "UPDATE", "DELETE"} {
			q := fmt.Sprintf("SELECT has_table_privilege('alice', 'kt', '%s')", priv)
			if diff := diffWithPG(t, sdb, pgc, q); diff != "" {
				t.Errorf("granted %q: %s differs:\n%s", g, q, diff)
			}
		}
		for _, w := range writes {
			serr, perr := keyedExec(alice, w), keyedExec(pgAlice, w)
			if got, want := errText(serr), errText(perr); got != want {
				t.Errorf("granted %q: %s\n  streamdb:   %q\n  PostgreSQL: %q", g, w, got, want)
			}
			if diff := diffWithPG(t, sdb, pgc, "SELECT * FROM kt"); diff != "" {
				t.Fatalf("granted %q: after %s the table differs:\n%s", g, w, diff)
			}
		}
	}
}
