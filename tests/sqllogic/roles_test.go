package sqllogic

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamdb/streamdb/sql/scram"
)

// connAs connects to srv as user with password (sslmode as given).
func connAs(t *testing.T, srv *Server, user, password, sslmode string) (*pgx.Conn, error) {
	t.Helper()
	cfg, err := pgx.ParseConfig("postgres://" + srv.Addr() + "/streamdb?sslmode=" + sslmode)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Password = user, password
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		t.Cleanup(func() { c.Close(context.Background()) })
	}
	return c, err
}

func mustConnAs(t *testing.T, srv *Server, user, password string) *pgx.Conn {
	t.Helper()
	c, err := connAs(t, srv, user, password, "disable")
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	return c
}

// wantErr checks that err is a PostgreSQL error with code whose message contains msg.
func wantErr(t *testing.T, what string, err error, code, msg string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code || !strings.Contains(pe.Message, msg) {
		t.Errorf("%s: got %v, want %s %q", what, err, code, msg)
	}
}

// execErr runs stmt on c and checks it fails with code and msg.
func execErr(t *testing.T, c *pgx.Conn, stmt, code, msg string) {
	t.Helper()
	_, err := c.Exec(context.Background(), stmt)
	wantErr(t, stmt, err, code, msg)
}

func queryErr(t *testing.T, c *pgx.Conn, q, code, msg string) {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err == nil {
		for rows.Next() {
		}
		rows.Close()
		err = rows.Err()
	}
	wantErr(t, q, err, code, msg)
}

func count(t *testing.T, c *pgx.Conn, q string) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestRolesAndPrivileges: role lifecycle, logins, and what a role that is
// not a superuser may do, before and after GRANT and REVOKE.
func TestRolesAndPrivileges(t *testing.T) {
	srv := StartServer(t, "")
	su := srv.Conn(t)
	ctx := context.Background()
	if got := su.PgConn().ParameterStatus("is_superuser"); got != "on" {
		t.Errorf("streamdb: is_superuser = %q", got)
	}
	execAll(t, su,
		"SET checkpoint.interval = 'off'",
		"CREATE ROLE alice WITH LOGIN PASSWORD 'pw1'",
		"CREATE USER bob PASSWORD 'pw2'",
		"CREATE ROLE grp",
		"CREATE TABLE s (k BIGINT)",
		"INSERT INTO s VALUES (1), (2)",
		"CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n FROM s GROUP BY k",
		"CHECKPOINT")
	execErr(t, su, "CREATE ROLE alice", "42710", `role "alice" already exists`)
	execErr(t, su, "CREATE ROLE public", "42939", "reserved")
	execErr(t, su, "CREATE ROLE x CREATEDB", "0A000", "CREATEDB")

	rows, err := su.Query(ctx, "SHOW ROLES")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var name string
		var super, login, pw bool
		if err := rows.Scan(&name, &super, &login, &pw); err != nil {
			t.Fatal(err)
		}
		if name == "alice" || name == "bob" || name == "grp" || name == "streamdb" {
			got = append(got, strings.Join([]string{name, yes(super), yes(login), yes(pw)}, " "))
		}
	}
	if want := "alice - x x|bob - x x|grp - - -|streamdb x x -"; strings.Join(got, "|") != want {
		t.Errorf("SHOW ROLES: %q, want %q", strings.Join(got, "|"), want)
	}

	// Logins.
	_, err = connAs(t, srv, "alice", "wrong", "disable")
	wantErr(t, "wrong password", err, "28P01", `password authentication failed for user "alice"`)
	_, err = connAs(t, srv, "grp", "", "disable")
	wantErr(t, "NOLOGIN", err, "28000", `role "grp" is not permitted to log in`)
	_, err = connAs(t, srv, "nobody", "", "disable")
	wantErr(t, "unknown role", err, "28000", `role "nobody" does not exist`)
	alice := mustConnAs(t, srv, "alice", "pw1")
	if got := alice.PgConn().ParameterStatus("is_superuser"); got != "off" {
		t.Errorf("alice: is_superuser = %q", got)
	}
	var isSU string
	if err := alice.QueryRow(ctx, "SHOW is_superuser").Scan(&isSU); err != nil || isSU != "off" {
		t.Errorf("SHOW is_superuser: %q %v", isSU, err)
	}
	execErr(t, alice, "SET is_superuser = on", "55P02", `parameter "is_superuser" cannot be changed`)
	execAll(t, alice, "RESET ALL")
	if err := alice.QueryRow(ctx, "SHOW is_superuser").Scan(&isSU); err != nil || isSU != "off" {
		t.Errorf("SHOW is_superuser after RESET ALL: %q %v", isSU, err)
	}

	// Without grants.
	queryErr(t, alice, "SELECT * FROM s", "42501", "permission denied for table s")
	queryErr(t, alice, "SELECT * FROM v", "42501", "permission denied for materialized view v")
	queryErr(t, alice, "SELECT count(*) FROM (SELECT k FROM s) x", "42501", "permission denied for table s")
	queryErr(t, alice, "SELECT * FROM v EMIT CHANGES", "42501", "permission denied for materialized view v")
	queryErr(t, alice, "EXPLAIN SELECT * FROM s", "42501", "permission denied for table s")
	execErr(t, alice, "INSERT INTO s VALUES (3)", "42501", "permission denied for table s")
	_, err = alice.PgConn().CopyFrom(ctx, strings.NewReader("3\n"), "COPY s FROM STDIN")
	wantErr(t, "COPY FROM", err, "42501", "permission denied for table s")
	_, err = alice.PgConn().CopyTo(ctx, &bytes.Buffer{}, "COPY s TO STDOUT")
	wantErr(t, "COPY TO", err, "42501", "permission denied for table s")
	execErr(t, alice, "DECLARE c CURSOR FOR SELECT * FROM s", "42501", "permission denied for table s")
	execErr(t, alice, "DROP TABLE s", "42501", "must be owner of table s")
	execErr(t, alice, "DROP MATERIALIZED VIEW v", "42501", "must be owner of materialized view v")
	execErr(t, alice, "CREATE MATERIALIZED VIEW mine AS SELECT k FROM s", "42501", "permission denied for table s")
	execErr(t, alice, "SET checkpoint.interval = '5s'", "42501", `permission denied to set parameter "checkpoint.interval"`)
	execErr(t, alice, "RESET checkpoint.interval", "42501", "permission denied to set parameter")
	execErr(t, alice, "CHECKPOINT", "42501", "must be superuser")
	execErr(t, alice, "CREATE SAVEPOINT sp", "42501", "must be superuser")
	execErr(t, alice, "DROP SAVEPOINT sp", "42501", "must be superuser")
	execErr(t, alice, "RESTORE v FROM SAVEPOINT sp", "42501", "must be superuser")
	execErr(t, alice, "STOP JOB v", "42501", "must be superuser")
	execErr(t, alice, "START JOB v", "42501", "must be superuser")
	execErr(t, alice, "ALTER MATERIALIZED VIEW v SET (restart.strategy = 'none')", "42501", "must be superuser")
	execErr(t, alice, "CREATE ROLE eve", "42501", "permission denied to create role")
	execErr(t, alice, "ALTER ROLE alice SUPERUSER", "42501", "permission denied to alter role")
	execErr(t, alice, "ALTER ROLE bob PASSWORD 'x'", "42501", "permission denied to alter role")
	execErr(t, alice, "DROP ROLE bob", "42501", "permission denied to drop role")
	execErr(t, alice, "GRANT SELECT ON s TO alice", "42501", "permission denied for table s")
	execAll(t, alice, "SET statement_timeout = '30s'", "SET application_name = 'a'")
	if n := count(t, alice, "SELECT count(*) FROM streamdb_jobs"); n < 1 {
		t.Errorf("streamdb_jobs: %d rows", n)
	}

	// GRANT SELECT: reads work, writes do not.
	execAll(t, su, "GRANT SELECT ON TABLE s, v TO alice")
	if n := count(t, alice, "SELECT count(*) FROM s"); n != 2 {
		t.Errorf("alice reads %d rows of s", n)
	}
	if n := count(t, alice, "SELECT count(*) FROM v"); n != 2 {
		t.Errorf("alice reads %d rows of v", n)
	}
	var buf bytes.Buffer
	if _, err := alice.PgConn().CopyTo(ctx, &buf, "COPY s TO STDOUT"); err != nil || buf.String() != "1\n2\n" {
		t.Errorf("COPY TO: %q %v", buf.String(), err)
	}
	execErr(t, alice, "INSERT INTO s VALUES (3)", "42501", "permission denied for table s")
	queryErr(t, bob(t, srv), "SELECT * FROM s", "42501", "permission denied for table s")

	// GRANT INSERT.
	execAll(t, su, "GRANT INSERT ON s TO alice")
	execAll(t, alice, "INSERT INTO s VALUES (3)")
	if _, err := alice.PgConn().CopyFrom(ctx, strings.NewReader("4\n"), "COPY s FROM STDIN"); err != nil {
		t.Errorf("COPY FROM after GRANT INSERT: %v", err)
	}
	if n := count(t, su, "SELECT count(*) FROM s"); n != 4 {
		t.Errorf("s has %d rows, want 4", n)
	}

	// A role's own objects: create, read, grant, drop.
	execAll(t, alice,
		"CREATE TABLE mine (x BIGINT)",
		"INSERT INTO mine VALUES (7)",
		"CREATE MATERIALIZED VIEW mv AS SELECT k FROM s",
		"GRANT SELECT ON mine TO bob")
	if n := count(t, alice, "SELECT count(*) FROM mine"); n != 1 {
		t.Errorf("alice reads %d rows of her own table", n)
	}
	if n := count(t, bob(t, srv), "SELECT count(*) FROM mine"); n != 1 {
		t.Errorf("bob reads %d rows of mine", n)
	}
	execErr(t, bob(t, srv), "GRANT SELECT ON mine TO bob", "42501", "permission denied for table mine")
	execAll(t, alice, "DROP MATERIALIZED VIEW mv")

	// REVOKE.
	execAll(t, su, "REVOKE SELECT ON s FROM alice")
	queryErr(t, alice, "SELECT * FROM s", "42501", "permission denied for table s")
	execAll(t, alice, "INSERT INTO s VALUES (5)") // INSERT stays

	// A role may change its own password.
	execAll(t, alice, "ALTER ROLE alice PASSWORD 'pw3'")
	if _, err := connAs(t, srv, "alice", "pw1", "disable"); err == nil {
		t.Error("old password still works")
	}
	mustConnAs(t, srv, "alice", "pw3")

	// DROP ROLE.
	execErr(t, su, "DROP ROLE alice", "2BP01", `role "alice" cannot be dropped because some objects depend on it`)
	execErr(t, su, "DROP ROLE streamdb", "2BP01", "required by the database system")
	execAll(t, su, "DROP ROLE grp", "DROP ROLE IF EXISTS nobody")
	execErr(t, su, "DROP ROLE grp", "42704", `role "grp" does not exist`)
	execAll(t, su, "ALTER ROLE bob NOLOGIN")
	_, err = connAs(t, srv, "bob", "pw2", "disable")
	wantErr(t, "after NOLOGIN", err, "28000", "not permitted to log in")
	execAll(t, su, "ALTER ROLE bob LOGIN PASSWORD NULL")
	mustConnAs(t, srv, "bob", "") // loopback, no password: trusted by default
	execAll(t, su, "ALTER ROLE alice SUPERUSER")
	if n := count(t, alice, "SELECT count(*) FROM s"); n != 5 {
		t.Errorf("alice as superuser reads %d rows", n)
	}
}

func bob(t *testing.T, srv *Server) *pgx.Conn { return mustConnAs(t, srv, "bob", "pw2") }

func yes(b bool) string {
	if b {
		return "x"
	}
	return "-"
}

// TestRolesSurviveRestart: roles, passwords, owners and grants are in the
// catalog and survive kill -9.
func TestRolesSurviveRestart(t *testing.T) {
	srv := StartServer(t, "")
	execAll(t, srv.Conn(t), "CREATE USER alice PASSWORD 'pw'", "CREATE USER bob PASSWORD 'pw'",
		"CREATE TABLE s (k BIGINT)", "INSERT INTO s VALUES (1)", "GRANT SELECT ON s TO alice")
	execAll(t, mustConnAs(t, srv, "bob", "pw"), "CREATE TABLE b (x BIGINT)")
	srv.Kill9()
	srv.Restart(t)
	alice := mustConnAs(t, srv, "alice", "pw")
	if n := count(t, alice, "SELECT count(*) FROM s"); n != 1 {
		t.Errorf("alice reads %d rows after restart", n)
	}
	queryErr(t, alice, "SELECT * FROM b", "42501", "permission denied for table b")
	execErr(t, alice, "DROP TABLE b", "42501", "must be owner of table b")
	bobc := mustConnAs(t, srv, "bob", "pw")
	execAll(t, bobc, "CREATE MATERIALIZED VIEW bv AS SELECT x FROM b", "GRANT SELECT ON b, bv TO PUBLIC")
	if n := count(t, alice, "SELECT count(*) FROM b"); n != 0 {
		t.Errorf("alice reads %d rows of b granted to PUBLIC", n)
	}
	execErr(t, alice, "CREATE OR REPLACE MATERIALIZED VIEW bv AS SELECT x + 1 AS x FROM b", "42501", "must be owner of materialized view bv")
	execAll(t, bobc, "REVOKE ALL ON b FROM PUBLIC")
	queryErr(t, alice, "SELECT * FROM b", "42501", "permission denied for table b")
	if n := count(t, alice, "SELECT count(*) FROM bv"); n != 0 { // bv reads b with bob's rights
		t.Errorf("alice reads %d rows of bv", n)
	}
	execAll(t, bobc, "DROP TABLE b CASCADE")
	if _, err := connAs(t, srv, "alice", "nope", "disable"); err == nil {
		t.Error("wrong password accepted after restart")
	}
}

// runPsql runs psql as user with PGPASSWORD set to password.
func runPsql(t *testing.T, srv *Server, user, password, command string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", "-X", "-w", "-At", "-h", host, "-p", port, "-U", user, "-c", command, "streamdb")
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "PAGER=", "PSQLRC=/dev/null", "PGPASSWORD="+password, "PGSSLMODE=disable")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRolesPsql: psql logs in with a password (libpq's SCRAM, with its
// SASLprep), and a wrong one is refused.
func TestRolesPsql(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql not installed")
	}
	srv := StartServer(t, "")
	execAll(t, srv.Conn(t), "CREATE USER alice PASSWORD 's3cret'", "CREATE USER carol PASSWORD 'I\u00ADX'")
	if out, err := runPsql(t, srv, "alice", "s3cret", "SELECT 1"); err != nil || out != "1\n" {
		t.Errorf("psql with the password: %v %q", err, out)
	}
	out, err := runPsql(t, srv, "alice", "wrong", "SELECT 1")
	if err == nil || !strings.Contains(out, `password authentication failed for user "alice"`) {
		t.Errorf("psql with a wrong password: %v %q", err, out)
	}
	// SASLprep maps the soft hyphen to nothing: both spellings log in.
	for _, pw := range []string{"I\u00ADX", "IX"} {
		if out, err := runPsql(t, srv, "carol", pw, "SHOW is_superuser"); err != nil || out != "off\n" {
			t.Errorf("psql as carol with %q: %v %q", pw, err, out)
		}
	}
	if out, err := runPsql(t, srv, "carol", "I-X", "SELECT 1"); err == nil {
		t.Errorf("psql as carol with I-X: logged in: %q", out)
	}
	// A ready verifier (as pg_dump writes them) is stored as it is.
	execAll(t, srv.Conn(t), "CREATE USER dave PASSWORD '"+scram.Verifier("from dump")+"'")
	if out, err := runPsql(t, srv, "dave", "from dump", "SELECT 1"); err != nil || out != "1\n" {
		t.Errorf("psql as dave (verifier given): %v %q", err, out)
	}
	// The server goes on.
	if n := count(t, srv.Conn(t), "SELECT 1"); n != 1 {
		t.Fatal("server gone")
	}
}

// TestBootstrapPassword: --password sets the bootstrap superuser's
// password, which loopback clients must then give too.
func TestBootstrapPassword(t *testing.T) {
	t.Setenv("PGPASSWORD", "topsecret") // for StartServer's own connections
	srv := StartServer(t, "", "--password", "topsecret")
	c := srv.Conn(t)
	if n := count(t, c, "SELECT 1"); n != 1 {
		t.Fatal("no connection")
	}
	_, err := connAs(t, srv, "streamdb", "nope", "disable")
	wantErr(t, "wrong bootstrap password", err, "28P01", "password authentication failed")
	if out, err := runPsql(t, srv, "streamdb", "topsecret", "SHOW is_superuser"); err != nil || out != "on\n" {
		t.Errorf("psql with --password: %v %q", err, out)
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "streamdb test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

// TestHBAConfig: authentication rules from the config file, first match
// wins: hostssl refuses a plain connection (28000) and accepts a TLS one;
// reject refuses; no matching rule refuses.
func TestHBAConfig(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	conf := filepath.Join(dir, "streamdb.toml")
	os.WriteFile(conf, []byte(`"checkpoint.interval" = "1s"
[[hba]]
type = "hostnossl"
database = "all"
user = "streamdb"
address = "127.0.0.1/32"
method = "trust"

[[hba]]
type = "host"
database = "all"
user = "eve"
address = "all"
method = "reject"

[[hba]]
type = "hostssl"
database = "streamdb"
user = "all"
address = "all"
method = "scram-sha-256"
`), 0o644)
	srv := StartServer(t, filepath.Join(dir, "data"), "--config", conf, "--tls-cert", cert, "--tls-key", key)
	execAll(t, srv.Conn(t), "CREATE USER alice PASSWORD 'pw'", "CREATE USER eve PASSWORD 'pw'")

	_, err := connAs(t, srv, "alice", "pw", "disable")
	wantErr(t, "plain connection", err, "28000",
		`no pg_hba.conf entry for host "127.0.0.1", user "alice", database "streamdb", no encryption`)
	c, err := connAs(t, srv, "alice", "pw", "require")
	if err != nil {
		t.Fatalf("TLS connection: %v", err)
	}
	if n := count(t, c, "SELECT 1"); n != 1 {
		t.Fatal("no result over TLS")
	}
	_, err = connAs(t, srv, "alice", "wrong", "require")
	wantErr(t, "TLS, wrong password", err, "28P01", "password authentication failed")
	_, err = connAs(t, srv, "eve", "pw", "require")
	wantErr(t, "reject", err, "28000", `pg_hba.conf rejects connection for host "127.0.0.1", user "eve"`)
	_, err = connAs(t, srv, "streamdb", "", "require")
	wantErr(t, "streamdb over TLS (only the scram rule matches)", err, "28P01", "password authentication failed")
}

// TestRefuseExposedTrust: listening beyond loopback with a rule that
// trusts clients beyond loopback stops startup.
func TestRefuseExposedTrust(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "trust.toml")
	os.WriteFile(conf, []byte("[[hba]]\ntype = \"host\"\ndatabase = \"all\"\nuser = \"all\"\naddress = \"all\"\nmethod = \"trust\"\n"), 0o644)
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(bin, "--config", conf, "--data-dir", filepath.Join(dir, "data"), "--listen", "0.0.0.0:0")
	if err == nil {
		t.Fatalf("server started on 0.0.0.0 trusting everyone: %s", out)
	}
	if !contains(out, "refusing to listen on 0.0.0.0:0") || !contains(out, "trust") {
		t.Errorf("unclear message: %s", out)
	}
	os.WriteFile(conf, []byte("[[hba]]\ntype = \"host\"\ndatabase = \"all\"\nuser = \"all\"\naddress = \"all\"\nmethod = \"md5\"\n"), 0o644)
	out, err = runCmd(bin, "--config", conf, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0")
	if err == nil || !contains(out, "md5") {
		t.Errorf("method md5: %v %s", err, out)
	}
}

// TestRolesPostgreSQLVerifiers: a verifier made by PostgreSQL (with its
// SASLprep) logs in to streamdb with the same password, and PostgreSQL takes
// a streamdb verifier as a verifier (it would hash anything else).
func TestRolesPostgreSQLVerifiers(t *testing.T) {
	pg := StartPG(t)
	pc := pg.Conn(t)
	ctx := context.Background()
	execAll(t, pc, "SET password_encryption = 'scram-sha-256'", "CREATE ROLE fromPG LOGIN PASSWORD 'I\u00ADX'")
	var v string
	if err := pc.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = 'frompg'").Scan(&v); err != nil {
		t.Fatal(err)
	}
	ours := scram.Verifier("pw")
	execAll(t, pc, "CREATE ROLE fromus PASSWORD '"+ours+"'")
	var same bool
	if err := pc.QueryRow(ctx, "SELECT rolpassword = $1 FROM pg_authid WHERE rolname = 'fromus'", ours).Scan(&same); err != nil || !same {
		t.Errorf("PostgreSQL did not keep streamdb's verifier as it is: %v", err)
	}

	srv := StartServer(t, "")
	execAll(t, srv.Conn(t), "CREATE USER frompg PASSWORD '"+v+"'")
	mustConnAs(t, srv, "frompg", "IX")
	if _, err := exec.LookPath("psql"); err == nil {
		if out, err := runPsql(t, srv, "frompg", "I\u00ADX", "SELECT 1"); err != nil || out != "1\n" {
			t.Errorf("psql with PostgreSQL's verifier: %v %q", err, out)
		}
	}
}
