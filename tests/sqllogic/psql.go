package sqllogic

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// PsqlResult is what one psql run printed and its exit code.
type PsqlResult struct {
	Stdout, Stderr string
	Code           int
}

// RunPsql runs the real psql -X as user streamdb against host and port
// (comma-separated lists for libpq's failover), with env added to its
// environment, args, and stdin as its input.
func RunPsql(t *testing.T, host, port string, env []string, stdin string, args ...string) PsqlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := append([]string{"-X", "-h", host, "-p", port, "-U", "streamdb"}, args...)
	all = append(all, "streamdb")
	cmd := exec.CommandContext(ctx, "psql", all...)
	// Untranslated messages, no pager, no password prompt, no user psqlrc.
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "PAGER=", "PGCONNECT_TIMEOUT=10", "PSQLRC=/dev/null")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := PsqlResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.Code = exitErr.ExitCode()
	default:
		t.Fatalf("psql %q: %v", all, err)
	}
	return res
}
