package sqllogic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file holds the process helpers shared by end-to-end tests: build the
// streamdb binary once per test process, start it on a data directory, wait
// until it accepts connections, stop it with SIGTERM or kill -9, restart it.

// StartupTimeout bounds how long a server may take to accept connections.
const StartupTimeout = 60 * time.Second

// StopTimeout bounds how long a server may take to exit after SIGTERM.
const StopTimeout = 30 * time.Second

var build struct {
	once sync.Once
	dir  string // temporary directory holding the binary
	path string
	err  error
}

// Binary returns the path of a streamdb binary built from this checkout,
// building it on first use (once per test process). If STREAMDB_BIN is set it
// names a prebuilt binary instead. Call Cleanup from TestMain to remove the
// built binary.
func Binary() (string, error) {
	build.once.Do(func() {
		if p := os.Getenv("STREAMDB_BIN"); p != "" {
			build.path = p
			return
		}
		dir, err := os.MkdirTemp("", "streamdb-test-bin-")
		if err != nil {
			build.err = err
			return
		}
		build.dir = dir
		path := filepath.Join(dir, "streamdb")
		cmd := exec.Command("go", "build", "-o", path, "github.com/streamdb/streamdb/cmd/streamdb")
		out, err := cmd.CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build ./cmd/streamdb: %v\n%s", err, out)
			return
		}
		build.path = path
	})
	return build.path, build.err
}

// Cleanup removes the binary built by Binary.
func Cleanup() {
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
}

// Server is a streamdb process started by a test.
type Server struct {
	tb      testing.TB
	bin     string
	dataDir string
	env     []string // added to the process environment
	args    []string
	addr    string // host:port the server listens on
	out     *outputLog

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	waitErr error         // set before exited is closed
	// deadline is when a launched server must accept connections by.
	deadline time.Time
}

// StartServer builds (once) and starts streamdb with --data-dir dataDir (a new
// t.TempDir() if empty) on a free loopback port, and waits until it accepts
// connections. The server is killed when the test ends if it is still
// running; its output is logged if the test failed.
func StartServer(t testing.TB, dataDir string, extraArgs ...string) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, bin, nil, dataDir, extraArgs...)
}

// StartServerEnv is StartServer with env added to the process environment.
func StartServerEnv(t *testing.T, env []string, dataDir string, args ...string) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, bin, env, dataDir, args...)
}

// startServer starts bin (with env added to the environment) as StartServer
// does.
func startServer(t testing.TB, bin string, env []string, dataDir string, extraArgs ...string) *Server {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{tb: t, bin: bin, env: env, dataDir: dataDir, args: extraArgs, addr: addr, out: &outputLog{}}
	t.Cleanup(func() {
		if s.running() {
			s.kill()
		}
		if out := s.out.tail(64 << 10); t.Failed() && out != "" {
			t.Logf("streamdb output (data dir %s):\n%s", s.dataDir, out)
		}
	})
	s.startFresh(t)
	return s
}

// startFresh is the first start of s. A port FreeAddr found free can be
// taken by another test process's listener before the server binds it
// (both draw from the same range), so when the server exits on "address
// already in use" the address it names (--listen's or one in the
// arguments, e.g. --peer-listen) is drawn again, at most three times. A
// restart keeps its addresses: clients and peers know them.
func (s *Server) startFresh(t testing.TB) {
	t.Helper()
	for try := 0; ; try++ {
		taken := ""
		if try < 3 {
			taken = s.tryStart(t)
		} else {
			s.start(t)
		}
		if taken == "" {
			return
		}
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if s.addr == taken {
			s.addr = addr
		}
		s.args = slices.Clone(s.args)
		for i, a := range s.args {
			s.args[i] = strings.ReplaceAll(a, taken, addr)
		}
	}
}

// takenRe finds the address a server could not bind.
var takenRe = regexp.MustCompile(`listen tcp (\S+): bind: address already in use`)

// tryStart is start, except that a server that exits because an address
// it was given is taken returns that address ("" once it is up).
func (s *Server) tryStart(t testing.TB) (taken string) {
	t.Helper()
	s.launch(t)
	for {
		select {
		case <-s.exited:
			if m := takenRe.FindStringSubmatch(s.out.sinceStart()); m != nil {
				t.Logf("streamdb could not bind %s (taken since it was drawn); drawing again", m[1])
				return m[1]
			}
		default:
		}
		if s.awaitStep(t) {
			return ""
		}
	}
}

// Arg is the value that follows flag in the server's arguments ("" if none).
func (s *Server) Arg(flag string) string {
	for i, a := range s.args {
		if a == flag && i+1 < len(s.args) {
			return s.args[i+1]
		}
	}
	return ""
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
// The port is chosen here rather than with --listen :0 so a restarted server
// comes back on the same address.
//
// The port is drawn from below the kernel's ephemeral range (32768 and up on
// Linux): a port from that range, free when chosen, can be taken by any
// process's outgoing connection before the server binds it (seen with the
// test packages running side by side: "bind: address already in use"),
// while a port below it is only ever taken by a listener that asks for it.
func FreeAddr() (string, error) {
	for range 64 {
		port := freePortLow + rand.IntN(freePortHigh-freePortLow)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken: draw again
		}
		addr := l.Addr().String()
		l.Close()
		return addr, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// The range FreeAddr draws from: above the well-known services, below
// Linux's default ip_local_port_range (32768-60999).
const freePortLow, freePortHigh = 20000, 32000

var listeningRe = regexp.MustCompile(`listening on (\S+)`)

func (s *Server) start(t testing.TB) {
	t.Helper()
	s.launch(t)
	for !s.awaitStep(t) {
	}
}

// launch starts the server process.
func (s *Server) launch(t testing.TB) {
	t.Helper()
	args := append([]string{"--listen", s.addr, "--data-dir", s.dataDir}, s.args...)
	s.cmd = exec.Command(s.bin, args...)
	if s.env != nil {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	s.out.restarted()
	s.cmd.Stdout = s.out
	s.cmd.Stderr = s.out
	s.exited = make(chan struct{})
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start streamdb: %v", err)
	}
	go func(cmd *exec.Cmd, exited chan struct{}) {
		s.waitErr = cmd.Wait()
		close(exited)
	}(s.cmd, s.exited)
	s.deadline = time.Now().Add(StartupTimeout)
}

// awaitStep checks once whether the launched server accepts connections
// (true), failing the test if it exited or passed its deadline, and
// otherwise pauses briefly (false).
func (s *Server) awaitStep(t testing.TB) bool {
	t.Helper()
	select {
	case <-s.exited:
		t.Fatalf("streamdb exited before accepting connections (%s); output:\n%s", exitStatus(s.waitErr), s.out.tail(16<<10))
	default:
	}
	// The server says where it listens; normally that is where we asked.
	if m := listeningRe.FindStringSubmatch(s.out.sinceStart()); m != nil {
		s.addr = strings.TrimRight(m[1], ".,;")
	}
	if s.ping() == nil {
		return true
	}
	if time.Now().After(s.deadline) {
		s.kill()
		t.Fatalf("streamdb did not accept connections on %s within %v; output:\n%s", s.addr, StartupTimeout, s.out.tail(16<<10))
	}
	time.Sleep(20 * time.Millisecond)
	return false
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (s *Server) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.ConnString())
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

func (s *Server) running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Addr returns the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// DataDir returns the server's data directory.
func (s *Server) DataDir() string { return s.dataDir }

// ConnString returns a pgx/libpq connection URL for the server.
func (s *Server) ConnString() string { return ConnString(s.addr) }

// ConnString returns the connection URL for a streamdb server at addr
// (host:port); an addr that is already a URL is returned unchanged.
func ConnString(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "postgres://streamdb@" + addr + "/streamdb?sslmode=disable"
}

// Conn opens a connection to the server, closed when the test ends.
func (s *Server) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.ConnString())
	if err != nil {
		t.Fatalf("connect to streamdb at %s: %v", s.addr, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Output returns everything the server has printed, across restarts.
func (s *Server) Output() string { return s.out.String() }

// Exited is closed when the server process has exited (the current one,
// after a Restart); ExitErr is then its exit status, nil for 0.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// ExitErr is the exit status of the server process once Exited is closed.
func (s *Server) ExitErr() error { return s.waitErr }

// OutputSinceStart returns what the server has printed since its last
// (re)start.
func (s *Server) OutputSinceStart() string { return s.out.sinceStart() }

// Signal sends sig to the running server process (SIGSTOP and SIGCONT
// freeze and thaw it).
func (s *Server) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

// Kill9 kills the server with SIGKILL and waits for it to exit.
func (s *Server) Kill9() {
	s.tb.Helper()
	if !s.running() {
		s.tb.Fatalf("Kill9: streamdb is not running")
	}
	s.kill()
}

func (s *Server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// Stop sends SIGTERM and waits for the server to exit; it fails the test if
// the server does not exit with status 0 within StopTimeout.
func (s *Server) Stop() {
	s.tb.Helper()
	if !s.running() {
		s.tb.Fatalf("Stop: streamdb is not running (exit: %v)", s.waitErr)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.tb.Fatalf("Stop: SIGTERM: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(StopTimeout):
		s.kill()
		s.tb.Fatalf("Stop: streamdb did not exit within %v of SIGTERM; killed it", StopTimeout)
	}
	var exitErr *exec.ExitError
	switch {
	case s.waitErr == nil:
	case errors.As(s.waitErr, &exitErr):
		s.tb.Fatalf("Stop: streamdb exited with %v after SIGTERM, want status 0", exitErr)
	default:
		s.tb.Fatalf("Stop: %v", s.waitErr)
	}
}

// Restart stops the server gracefully if it is running, then starts it again
// with the same data directory, address and arguments. Connections opened
// before must be reopened.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.running() {
		s.Stop()
	}
	s.start(t)
}

// outputLog collects a process's combined output, keeping the most recent
// maxOutput bytes.
type outputLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	start int // offset in buf where the current process's output begins
}

const maxOutput = 4 << 20

func (o *outputLog) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if o.buf.Len() > maxOutput {
		drop := o.buf.Len() - maxOutput/2
		o.buf.Next(drop)
		o.start = max(0, o.start-drop)
	}
	return len(p), nil
}

// restarted marks the start of a new process's output.
func (o *outputLog) restarted() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.buf.Len() > 0 {
		o.buf.WriteString("---- restart ----\n")
	}
	o.start = o.buf.Len()
}

func (o *outputLog) sinceStart() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.buf.Bytes()[o.start:])
}

func (o *outputLog) tail(n int) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.buf.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func (o *outputLog) String() string { return o.tail(maxOutput) }
