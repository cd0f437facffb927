package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamdb/streamdb/sqlerr"
)

func rules(t *testing.T, specs ...[5]string) []HBARule {
	t.Helper()
	var out []HBARule
	for _, s := range specs {
		r, err := NewHBARule(s[0], s[1], s[2], s[3], s[4])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestAuthRules(t *testing.T) {
	scramAll := [5]string{"host", "all", "all", "all", "scram-sha-256"}
	roles := map[string]fakeRole{
		"streamdb": loginRole("", true),
		"alice":    loginRole("s3cret", false),
		"carol":    loginRole("I\u00ADX", false), // SASLprep maps the soft hyphen to nothing
		"nopw":     loginRole("", false),
		"group":    {verifier: loginRole("pw", false).verifier},
	}
	tests := []struct {
		name, user, password string
		hba                  []HBARule
		wantCode, wantMsg    string
		superuser            string
	}{
		{name: "default: loopback role without password is trusted", user: "streamdb", superuser: "on"},
		{name: "default: role with password must give it", user: "alice", password: "s3cret", superuser: "off"},
		{name: "default: wrong password", user: "alice", password: "nope", wantCode: sqlerr.InvalidPassword,
			wantMsg: `password authentication failed for user "alice"`},
		{name: "default: unknown role", user: "mallory", wantCode: sqlerr.InvalidAuthorization, wantMsg: `role "mallory" does not exist`},
		{name: "default: nologin", user: "group", password: "pw", wantCode: sqlerr.InvalidAuthorization,
			wantMsg: `role "group" is not permitted to log in`},
		// pgx does not SASLprep (libpq does: see the psql test in tests/sqllogic).
		{name: "saslprep: normalized", user: "carol", password: "IX"},
		{name: "scram: unknown role looks like a wrong password", user: "mallory", password: "x", hba: rules(t, scramAll),
			wantCode: sqlerr.InvalidPassword, wantMsg: `password authentication failed for user "mallory"`},
		{name: "scram: role without password", user: "nopw", password: "x", hba: rules(t, scramAll),
			wantCode: sqlerr.InvalidPassword},
		{name: "scram: ok", user: "alice", password: "s3cret", hba: rules(t, scramAll)},
		{name: "trust: any password", user: "alice", password: "whatever",
			hba: rules(t, [5]string{"host", "all", "alice", "127.0.0.1", "trust"})},
		{name: "reject", user: "alice", password: "s3cret",
			hba:      rules(t, [5]string{"host", "all", "alice", "all", "reject"}, scramAll),
			wantCode: sqlerr.InvalidAuthorization, wantMsg: `pg_hba.conf rejects connection for host "127.0.0.1", user "alice", database "streamdb", no encryption`},
		{name: "first match wins", user: "alice", password: "s3cret",
			hba: rules(t, [5]string{"host", "other", "all", "all", "reject"}, [5]string{"host", "streamdb", "alice,bob", "samehost", "scram-sha-256"})},
		{name: "no rule matches", user: "alice", password: "s3cret",
			hba:      rules(t, [5]string{"host", "all", "all", "10.0.0.0/8", "trust"}),
			wantCode: sqlerr.InvalidAuthorization, wantMsg: `no pg_hba.conf entry for host "127.0.0.1", user "alice", database "streamdb", no encryption`},
		{name: "hostssl refuses a plain connection", user: "alice", password: "s3cret",
			hba:      rules(t, [5]string{"hostssl", "all", "all", "all", "scram-sha-256"}),
			wantCode: sqlerr.InvalidAuthorization, wantMsg: `no pg_hba.conf entry for host "127.0.0.1", user "alice", database "streamdb", no encryption`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := newFakeEngine()
			eng.roles = roles
			_, addr := startServer(t, Config{HBA: tc.hba}, eng)
			cfg, err := pgx.ParseConfig("postgres://" + addr + "/streamdb?sslmode=disable")
			if err != nil {
				t.Fatal(err)
			}
			cfg.User, cfg.Password = tc.user, tc.password
			conn, err := pgx.ConnectConfig(testCtx(t), cfg)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				defer conn.Close(context.Background())
				if tc.superuser != "" {
					if got := conn.PgConn().ParameterStatus("is_superuser"); got != tc.superuser {
						t.Errorf("is_superuser = %q, want %q", got, tc.superuser)
					}
				}
				return
			}
			var pe *pgconn.PgError
			if err == nil {
				conn.Close(context.Background())
				t.Fatalf("connected, want %s", tc.wantCode)
			}
			if !errors.As(err, &pe) || pe.Code != tc.wantCode || pe.Severity != "FATAL" || !strings.Contains(pe.Message, tc.wantMsg) {
				t.Fatalf("got %v, want FATAL %s %s", err, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

func TestAuthHostSSL(t *testing.T) {
	eng := newFakeEngine()
	eng.roles = map[string]fakeRole{"alice": loginRole("pw", false)}
	hba := rules(t, [5]string{"hostssl", "all", "all", "all", "scram-sha-256"})
	_, addr := startServer(t, Config{TLS: selfSignedTLS(t), HBA: hba}, eng)
	conn, err := pgx.Connect(testCtx(t), "postgres://alice:pw@"+addr+"/streamdb?sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("connection is %T, want *tls.Conn", conn.PgConn().Conn())
	}
	_, err = pgx.Connect(testCtx(t), "postgres://alice:pw@"+addr+"/streamdb?sslmode=disable")
	if pgCode(err) != sqlerr.InvalidAuthorization || !strings.Contains(err.Error(), "no encryption") {
		t.Fatalf("plain connection: got %v, want 28000", err)
	}
}

// The mock exchange for an unknown role offers the same salt every time, as
// a real role's does, so the salt does not tell whether the role exists.
func TestMockSaltIsStable(t *testing.T) {
	srv := New(Config{MockSecret: []byte("k")}, newFakeEngine())
	a, b := srv.mockSecret("mallory"), srv.mockSecret("mallory")
	if string(a.salt) != string(b.salt) || string(a.salt) == string(srv.mockSecret("eve").salt) {
		t.Fatalf("mock salts: %x %x", a.salt, b.salt)
	}
}

func TestCheckExposure(t *testing.T) {
	trustAll := rules(t, [5]string{"host", "all", "all", "all", "trust"})
	trustLoop := rules(t, [5]string{"host", "all", "all", "127.0.0.1/32", "trust"}, [5]string{"host", "all", "all", "all", "scram-sha-256"})
	for _, tc := range []struct {
		listen string
		hba    []HBARule
		ok     bool
	}{
		{"127.0.0.1:5433", trustAll, true},
		{"localhost:5433", trustAll, true},
		{"0.0.0.0:5433", nil, true},
		{"0.0.0.0:5433", trustLoop, true},
		{"0.0.0.0:5433", trustAll, false},
		{":5433", trustAll, false},
		{"[::]:5433", rules(t, [5]string{"host", "all", "all", "10.0.0.0/8", "trust"}), false},
	} {
		err := CheckExposure(tc.listen, tc.hba)
		if (err == nil) != tc.ok {
			t.Errorf("CheckExposure(%s): %v, want ok=%v", tc.listen, err, tc.ok)
		}
	}
	if _, err := NewHBARule("local", "all", "all", "all", "trust"); err == nil {
		t.Error("type local accepted")
	}
	if _, err := NewHBARule("host", "all", "all", "10.0.0.0/33", "trust"); err == nil {
		t.Error("bad CIDR accepted")
	}
	if _, err := NewHBARule("host", "all", "all", "all", "md5"); err == nil {
		t.Error("method md5 accepted")
	}
}
