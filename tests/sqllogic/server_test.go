package sqllogic

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// fakeServerEnv makes the test binary act as a minimal server speaking just
// enough of the wire protocol for the process helpers to be tested without
// streamdb: it counts its starts in the data directory, answers every query
// with that count, and exits 0 on SIGTERM.
const fakeServerEnv = "SQLLOGIC_FAKE_SERVER"

func fakeServerMain() {
	fs := flag.NewFlagSet("fake", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:5433", "")
	dataDir := fs.String("data-dir", "", "")
	fs.Parse(os.Args[1:])

	counter := filepath.Join(*dataDir, "starts")
	b, _ := os.ReadFile(counter)
	starts, _ := strconv.Atoi(string(b))
	starts++
	if err := os.WriteFile(counter, []byte(strconv.Itoa(starts)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("fake streamdb listening on %s\n", l.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	go func() {
		<-sig
		l.Close()
		os.Exit(0)
	}()
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go fakeServe(conn, strconv.Itoa(starts))
	}
}

func fakeServe(conn net.Conn, answer string) {
	defer conn.Close()
	be := pgproto3.NewBackend(conn, conn)
	if _, err := be.ReceiveStartupMessage(); err != nil {
		return
	}
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	for {
		if err := be.Flush(); err != nil {
			return
		}
		msg, err := be.Receive()
		if err != nil {
			return
		}
		switch msg.(type) {
		case *pgproto3.Query:
			be.Send(&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("starts"), DataTypeOID: 25, DataTypeSize: -1, TypeModifier: -1}}})
			be.Send(&pgproto3.DataRow{Values: [][]byte{[]byte(answer)}})
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		case *pgproto3.Terminate:
			return
		}
	}
}

// TestServerLifecycle drives Server's start, Restart, Kill9 and Stop against
// the fake server.
func TestServerLifecycle(t *testing.T) {
	starts := func(s *Server) string {
		t.Helper()
		conn := s.Conn(t)
		res, err := conn.PgConn().Exec(context.Background(), "SELECT starts").ReadAll()
		if err != nil || len(res) != 1 || len(res[0].Rows) != 1 {
			t.Fatalf("query: %v %v", res, err)
		}
		return string(res[0].Rows[0][0])
	}
	dir := t.TempDir()
	s := startServer(t, os.Args[0], []string{fakeServerEnv + "=1"}, dir)
	addr := s.Addr()
	if s.DataDir() != dir {
		t.Errorf("DataDir = %q, want %q", s.DataDir(), dir)
	}
	if got := starts(s); got != "1" {
		t.Errorf("after start: starts = %s, want 1", got)
	}
	s.Restart(t)
	if got := starts(s); got != "2" || s.Addr() != addr {
		t.Errorf("after Restart: starts = %s at %s, want 2 at %s", got, s.Addr(), addr)
	}
	s.Kill9()
	if s.running() {
		t.Fatal("running after Kill9")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("still accepting connections after Kill9")
	}
	s.Restart(t)
	if got := starts(s); got != "3" || s.Addr() != addr {
		t.Errorf("after Kill9 and Restart: starts = %s at %s, want 3 at %s", got, s.Addr(), addr)
	}
	s.Stop()
	if s.running() {
		t.Fatal("running after Stop")
	}
	if out := s.Output(); !containsAll(out, "listening on", "---- restart ----") {
		t.Errorf("Output() = %q", out)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
