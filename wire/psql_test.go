package wire

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPsql runs the real psql against the server, if it is installed.
func TestPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	_, addr := startServer(t, Config{}, newFakeEngine())
	host, port, _ := net.SplitHostPort(addr)
	run := func(t *testing.T, stdin string, wantFail bool, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, psql, append([]string{"-X", "-h", host, "-p", port, "-U", "streamdb", "streamdb"}, args...)...)
		cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PGPASSWORD=")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if (err != nil) != wantFail {
			t.Fatalf("psql %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tests := []struct {
		name     string
		stdin    string
		args     []string
		want     string
		wantFail bool
	}{
		{"aligned table", "", []string{"-c", "SELECT id, name FROM t"},
			" id |        name        \n----+--------------------\n  1 | alice\n  2 | \n  3 | tab     here \\ new+\n    | line\n(3 rows)\n\n", false},
		{"unaligned, several statements", "", []string{"-At", "-c", "SELECT 1; SET x = 1; SELECT series"},
			"NOTICE:  x is now 1\n1\nSET\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", false},
		{"copy to stdout", "", []string{"-c", "COPY t TO STDOUT"},
			"1\talice\n2\t\\N\n3\ttab\\there \\\\ new\\nline\n", false},
		// psql sends the "\." end-of-data line as data; PostgreSQL's COPY
		// parser (and the engine's) stops there.
		{"copy from stdin", "7\tseven\n\\.\n", []string{"-c", "COPY t FROM STDIN"}, "COPY 1\n", false},
		{"error", "", []string{"-c", "SELECT error"}, "ERROR:  division by zero\nLINE 1: SELECT error\n               ^\nDETAIL:  d\nHINT:  h\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, tc.stdin, tc.wantFail, tc.args...); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
