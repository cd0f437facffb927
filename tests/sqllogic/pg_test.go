package sqllogic

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file starts a private PostgreSQL 15 cluster to serve as the oracle of
// differential tests: a fresh data directory under a temporary directory, a
// free loopback port, no fsync, C collation (streamdb compares text bytewise,
// as PostgreSQL does under the C locale), stopped when the test ends.

// pgBinDir holds initdb and postgres; STREAMDB_PG_BIN names another.
func pgBinDir() string {
	if d := os.Getenv("STREAMDB_PG_BIN"); d != "" {
		return d
	}
	return "/usr/lib/postgresql/15/bin"
}

// PG is a PostgreSQL server started by StartPG.
type PG struct {
	addr string
	out  *outputLog
	// launch makes the server's command; srv runs it (nil: stopped) until
	// exited is closed, with waitErr.
	launch  func() *exec.Cmd
	srv     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// ConnString returns a connection URL for the cluster's superuser.
func (p *PG) ConnString() string {
	return "postgres://postgres@" + p.addr + "/postgres?sslmode=disable"
}

// Conn opens a connection to the cluster, closed when the test ends.
func (p *PG) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.ConnString())
	if err != nil {
		t.Fatalf("connect to PostgreSQL at %s: %v", p.addr, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// StartPG initialises and starts a PostgreSQL cluster for this test. Without
// the server binaries it skips the test, or fails it when CI=true (CI must
// not silently lose the oracle). As root it runs the binaries as the
// postgres OS user, since postgres refuses to run as root.
func StartPG(t testing.TB) *PG {
	t.Helper()
	return StartPGConf(t)
}

// StartPGConf is StartPG with extra server settings, each "name=value"
// (passed as -c; e.g. wal_level=logical for logical replication).
func StartPGConf(t testing.TB, conf ...string) *PG {
	t.Helper()
	if testing.Short() {
		// The race pass of .ci/run runs -short against a race build of the
		// server; the tests that need PostgreSQL (as the oracle or as a
		// connector's other end) ran in its plain step on the same code.
		t.Skip("-short: tests that need PostgreSQL run in the plain step")
	}
	bin := pgBinDir()
	for _, name := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			msg := fmt.Sprintf("PostgreSQL server binaries not found in %s (install postgresql-15, or set STREAMDB_PG_BIN): %v", bin, err)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}

	var cred *syscall.Credential
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root and there is no postgres OS user to run PostgreSQL as: %v", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}

	// Not t.TempDir: its parent is private to root, and the postgres user
	// must reach the data directory.
	dir, err := os.MkdirTemp("", "streamdb-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if uid >= 0 {
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC", "PGTZ=UTC")
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return cmd
	}

	initdb := command("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}

	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	p := &PG{addr: addr, out: &outputLog{}}
	p.launch = func() *exec.Cmd {
		args := []string{"-D", data, "-p", port, "-k", sock,
			"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "max_connections=20", "-c", "timezone=UTC"}
		return command("postgres", append(args, confArgs(conf)...)...)
	}
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			t.Logf("postgres output:\n%s", p.out.tail(16<<10))
		}
	})
	p.Start(t)
	return p
}

func confArgs(conf []string) []string {
	var out []string
	for _, c := range conf {
		out = append(out, "-c", c)
	}
	return out
}

// Start starts the server (again, after Stop) and waits until it accepts
// connections.
func (p *PG) Start(t testing.TB) {
	t.Helper()
	srv := p.launch()
	srv.Stdout, srv.Stderr = p.out, p.out
	if err := srv.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	exited := make(chan struct{})
	p.srv, p.exited = srv, exited
	go func() { p.waitErr = srv.Wait(); close(exited) }()
	deadline := time.Now().Add(StartupTimeout)
	for {
		select {
		case <-exited:
			t.Fatalf("postgres exited before accepting connections (%s):\n%s", exitStatus(p.waitErr), p.out.tail(16<<10))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, p.ConnString())
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not accept connections on %s within %v: %v\n%s", p.addr, StartupTimeout, err, p.out.tail(16<<10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the server down (fast shutdown: sessions are cut) and waits
// for it; Start starts it again on the same address and data.
func (p *PG) Stop(t testing.TB) {
	t.Helper()
	if p.srv == nil {
		return
	}
	// SIGINT is PostgreSQL's fast shutdown.
	_ = p.srv.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(StopTimeout):
		_ = p.srv.Process.Kill()
		<-p.exited
	}
	p.srv = nil
}
