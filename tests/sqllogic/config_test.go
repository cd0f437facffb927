package sqllogic

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func show(t *testing.T, srv *Server, name string) string {
	t.Helper()
	c := srv.Conn(t)
	var v string
	if err := c.QueryRow(context.Background(), "SHOW "+name).Scan(&v); err != nil {
		t.Fatalf("SHOW %s: %v", name, err)
	}
	return v
}

// TestConfigFile: --config sets database settings at startup (flat dotted
// keys or TOML tables); SET overrides it and persists; RESET goes back to it.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "streamdb.toml")
	if err := os.WriteFile(conf, []byte(`"checkpoint.interval" = "250ms"
[restart]
strategy = "none"
[checkpoint]
retained = 5
`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := StartServer(t, filepath.Join(dir, "data"), "--config", conf)
	for name, want := range map[string]string{"checkpoint.interval": "250ms", "restart.strategy": "none", "checkpoint.retained": "5"} {
		if got := show(t, srv, name); got != want {
			t.Errorf("SHOW %s = %q, want %q from the config file", name, got, want)
		}
	}
	execAll(t, srv.Conn(t), "SET checkpoint.interval = '2s'")
	srv.Restart(t)
	if got := show(t, srv, "checkpoint.interval"); got != "2s" {
		t.Errorf("after restart: %q, want the SET value 2s", got)
	}
	execAll(t, srv.Conn(t), "RESET checkpoint.interval")
	if got := show(t, srv, "checkpoint.interval"); got != "250ms" {
		t.Errorf("after RESET: %q, want the config file's 250ms", got)
	}
}

// TestConfigFileInvalid: a bad value in the config file stops startup with
// a message naming the key.
func TestConfigFileInvalid(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "bad.toml")
	os.WriteFile(conf, []byte(`"checkpoint.mode" = "sometimes"`+"\n"), 0o644)
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(bin, "--config", conf, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0")
	if err == nil {
		t.Fatalf("server started with an invalid config: %s", out)
	}
	if !contains(out, "checkpoint.mode") {
		t.Errorf("error does not name the key: %s", out)
	}
}

// TestCheckpointCleanup: with delete_on_cancellation, dropping a view
// deletes the retained checkpoints that covered only it.
func TestCheckpointCleanup(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET checkpoint.interval = 'off'", "CREATE TABLE t (k BIGINT)",
		"CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n FROM t GROUP BY k", "CHECKPOINT", "CHECKPOINT")
	dir := filepath.Join(srv.DataDir(), "checkpoints")
	if n := countDirs(t, dir); n != 2 {
		t.Fatalf("%d retained checkpoints, want 2", n)
	}
	execAll(t, c, "SET checkpoint.cleanup = 'delete_on_cancellation'", "DROP MATERIALIZED VIEW v")
	if n := countDirs(t, dir); n != 0 {
		t.Errorf("%d retained checkpoints left after DROP with delete_on_cancellation", n)
	}
}

func countDirs(t *testing.T, dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(ents)
}

func runCmd(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
