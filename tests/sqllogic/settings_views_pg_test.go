package sqllogic

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestSettingsViewsPG checks that pg_settings shows the reading session's
// settings (a value it SET) and, as PostgreSQL's, leaves is_superuser out
// (SHOW names it), against PostgreSQL 15 with a superuser and an ordinary
// role; streamdb_settings, streamdb's SHOW ALL, agrees with SHOW.
func TestSettingsViewsPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	ctx := context.Background()
	pgSU, sdbSU := pg.Conn(t), srv.Conn(t)
	execAll(t, pgSU, "CREATE ROLE alice LOGIN")
	execAll(t, sdbSU, "CREATE ROLE alice LOGIN PASSWORD 'pw1'")
	cfg, err := pgx.ParseConfig(pg.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.User = "alice"
	pgAlice, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgAlice.Close(ctx) })
	sdbAlice := mustConnAs(t, srv, "alice", "pw1")

	const q = "SELECT name, setting FROM pg_settings WHERE name IN ('is_superuser', 'application_name') ORDER BY name"
	for _, c := range []struct {
		who      string
		pg, sdb  *pgx.Conn
		superuse string
	}{{"superuser", pgSU, sdbSU, "on"}, {"alice", pgAlice, sdbAlice, "off"}} {
		for _, conn := range []*pgx.Conn{c.pg, c.sdb} {
			execAll(t, conn, "SET application_name = 'settings_"+c.who+"'")
		}
		want := rowsOf(t, c.pg, q)
		if got := rowsOf(t, c.sdb, q); got != want {
			t.Errorf("%s: pg_settings\n%s\nwant (PostgreSQL)\n%s", c.who, got, want)
		}
		for _, sq := range []string{"SHOW is_superuser", "SELECT setting FROM streamdb_settings WHERE name = 'is_superuser'"} {
			if got := rowsOf(t, c.sdb, sq); got != c.superuse {
				t.Errorf("%s: %s = %q, want %q", c.who, sq, got, c.superuse)
			}
		}
	}
}
