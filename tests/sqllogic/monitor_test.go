package sqllogic

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
)

// Observability (issue #16): /metrics parsed with Prometheus's own text
// parser, /debug/pprof behind --pprof, Pebble's log lines in the server
// log, and the dashboard rendered by a real headless browser.

func mustMetric(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	v, ok := metricValue(fams, name, labels...)
	if !ok {
		t.Fatalf("/metrics has no %s%v", name, labels)
	}
	return v
}

func copyWords(t *testing.T, c *pgx.Conn, n int) {
	t.Helper()
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		buf.WriteString([]string{"red", "green", "blue"}[i%3])
		buf.WriteString("\t1\n")
	}
	tag, err := c.PgConn().CopyFrom(context.Background(), &buf, "COPY words FROM STDIN")
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != int64(n) {
		t.Fatalf("COPY: %s", tag)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	httpAddr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	srv := StartServer(t, "", "--http", httpAddr, "--log-level", "debug")
	c := srv.Conn(t)
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE words (w text, n int)",
		"CREATE MATERIALIZED VIEW wc AS SELECT w, count(*) AS c, sum(n) AS s FROM words GROUP BY w",
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	before := scrape(t, httpAddr)
	if v := mustMetric(t, before, "streamdb_job_rows_in_total", "job", "wc"); v != 0 {
		t.Fatalf("rows in before any row: %v", v)
	}
	mustMetric(t, before, "streamdb_job_state", "job", "wc", "state", "RUNNING")

	const n = 3000
	copyWords(t, c, n)
	if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "SELECT * FROM no_such_relation"); err == nil {
		t.Fatal("a missing relation did not fail")
	}
	after := scrape(t, httpAddr)
	// CHECKPOINT first catches the job up with its stream, so every row is in.
	if v := mustMetric(t, after, "streamdb_job_rows_in_total", "job", "wc"); v != n {
		t.Errorf("streamdb_job_rows_in_total{job=wc} = %v after COPY of %d rows and CHECKPOINT", v, n)
	}
	if v := mustMetric(t, after, "streamdb_job_rows_out_total", "job", "wc"); v < 3 {
		t.Errorf("streamdb_job_rows_out_total{job=wc} = %v, want the 3 groups' changes at least", v)
	}
	if v := mustMetric(t, after, "streamdb_job_lag_rows", "job", "wc"); v != 0 {
		t.Errorf("lag after CHECKPOINT = %v", v)
	}
	if v := mustMetric(t, after, "streamdb_job_state_bytes", "job", "wc"); v <= 0 {
		t.Errorf("state bytes of a job with 3 groups = %v", v)
	}
	if v := mustMetric(t, after, "streamdb_job_checkpoint_duration_seconds", "job", "wc", "status", "COMPLETED"); v < 1 {
		t.Errorf("checkpoint duration histogram of wc has %v observations after CHECKPOINT", v)
	}
	if v := mustMetric(t, after, "streamdb_job_epoch_duration_seconds", "job", "wc"); v < 1 {
		t.Errorf("epoch duration histogram of wc has %v observations", v)
	}
	if v := mustMetric(t, after, "streamdb_checkpoints_total", "trigger", "manual", "status", "COMPLETED"); v < 1 {
		t.Errorf("manual checkpoints completed: %v", v)
	}
	if v := mustMetric(t, after, "streamdb_checkpoint_size_bytes"); v < 1 {
		t.Errorf("checkpoint size histogram has %v observations", v)
	}
	if v := mustMetric(t, after, "streamdb_job_last_checkpoint_size_bytes", "job", "wc"); v <= 0 {
		t.Errorf("last checkpoint size of wc = %v", v)
	}
	mustMetric(t, after, "streamdb_job_restarts_total", "job", "wc")
	mustMetric(t, after, "streamdb_job_operator_parallelism", "job", "wc", "kind", "aggregate")
	if v := mustMetric(t, after, "streamdb_copy_rows_total", "direction", "in"); v != n {
		t.Errorf("streamdb_copy_rows_total{direction=in} = %v, want %d", v, n)
	}
	if v := mustMetric(t, after, "streamdb_queries_total", "type", "COPY", "outcome", "ok"); v != 1 {
		t.Errorf("COPY statements ok: %v", v)
	}
	if v := mustMetric(t, after, "streamdb_queries_total", "type", "CREATE", "outcome", "ok"); v != 2 {
		t.Errorf("CREATE statements ok: %v", v)
	}
	if v := mustMetric(t, after, "streamdb_queries_total", "type", "SELECT", "outcome", "42"); v != 1 {
		t.Errorf("SELECT statements failed with class 42: %v", v)
	}
	if v := mustMetric(t, after, "streamdb_connections"); v < 1 {
		t.Errorf("connections with one open: %v", v)
	}
	if v := mustMetric(t, after, "streamdb_pebble_disk_usage_bytes"); v <= 0 {
		t.Errorf("Pebble disk usage: %v", v)
	}
	for _, name := range []string{"streamdb_pebble_compactions_total", "streamdb_pebble_l0_files", "streamdb_pebble_l0_sublevels",
		"streamdb_pebble_memtables", "go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes"} {
		mustMetric(t, after, name)
	}
	// Pebble's own lines reach the server log (at debug: it says how many
	// WALs it found at open, then flushes and compactions).
	if out := srv.Output(); !strings.Contains(out, "component=pebble") {
		t.Errorf("no Pebble log line in the server's output:\n%s", out)
	}
	// pprof is off without --pprof.
	if code, _ := httpGet(t, "http://"+httpAddr+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without --pprof: HTTP %d", code)
	}
}

func TestPprofAndHTTPOff(t *testing.T) {
	httpAddr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	srv := StartServer(t, "", "--http", httpAddr, "--pprof")
	code, body := httpGet(t, "http://"+httpAddr+"/debug/pprof/goroutine?debug=1")
	if code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Errorf("/debug/pprof/goroutine with --pprof: HTTP %d: %.200s", code, body)
	}
	srv.Stop()

	off := StartServer(t, "", "--http", "")
	if out := off.Output(); strings.Contains(out, "serving metrics") {
		t.Errorf("--http '' still serves:\n%s", out)
	}
}

// chromiumBin finds Debian's chromium; without it the test skips, or fails
// when CI=true (.ci/run installs it).
func chromiumBin(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (apt-get install chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// chromium runs headless chromium on url with args, giving the page's
// scripts 5 s of virtual time to fetch and render.
func chromium(t *testing.T, bin, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	t.Logf("chromium %v took %v", args, time.Since(start).Round(time.Millisecond))
	return stdout.String()
}

func TestDashboardInBrowser(t *testing.T) {
	bin := chromiumBin(t)
	httpAddr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	srv := StartServer(t, "", "--http", httpAddr)
	c := srv.Conn(t)
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE words (w text, n int)",
		"CREATE TABLE colors (w text, hex text)",
		"CREATE MATERIALIZED VIEW wc AS SELECT w, count(*) AS c FROM words WHERE n > 0 GROUP BY w",
		"CREATE MATERIALIZED VIEW named AS SELECT words.w, colors.hex FROM words JOIN colors ON words.w = colors.w",
		"INSERT INTO colors VALUES ('red', '#f00'), ('green', '#0f0'), ('blue', '#00f')",
		// Event time: a watermark and a late row (00:00:04 arrives after
		// the window [00:00:00, 00:00:10) closed at watermark 00:00:11).
		"CREATE TABLE clicks (k BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)",
		`CREATE MATERIALIZED VIEW per10s AS SELECT window_start, count(*) AS n
		   FROM TUMBLE(clicks, ts, INTERVAL '10' SECOND) GROUP BY window_start`,
		"INSERT INTO clicks VALUES (1, '2026-01-01 00:00:01'), (2, '2026-01-01 00:00:13')",
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	copyWords(t, c, 900)
	waitWatermark(t, c, "per10s", ts("2026-01-01 00:00:11"))
	execAll(t, c, "INSERT INTO clicks VALUES (3, '2026-01-01 00:00:04')")
	waitLateRows(t, c, "per10s", 1)
	if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE SAVEPOINT before_upgrade"); err != nil {
		t.Fatal(err)
	}
	url := "http://" + httpAddr + "/"
	dom := chromium(t, bin, url, "--dump-dom")
	for _, want := range []string{
		`data-job="wc"`, `data-job="named"`, // a card per job
		`class="opgraph"`, `class="op op-source"`, `class="op op-aggregate"`, `class="op op-join"`, `class="op op-sink"`, // operator graphs
		`class="plot-svg throughput"`, `class="plot-svg lag"`, `class="plot-svg state"`, `class="series"`, // plots with lines
		`class="plot-svg checkpoints"`, `class="cp-bar"`, // the checkpoint history
		`class="plot-svg wmlag"`, "2026-01-01 00:00:11", // per10s: event-time lag plot and its watermark
		"late rows (1 in all)",              // per10s's late row
		"no watermark: its streams have no", // wc and named have no event time
		"before_upgrade",                    // savepoints
		"live · updated",                    // the poll worked
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered dashboard has no %s", want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
	shot := filepath.Join(t.TempDir(), "dash.png")
	if p := os.Getenv("STREAMDB_DASHBOARD_SCREENSHOT"); p != "" {
		shot = p // to look at it
	}
	chromium(t, bin, url, "--screenshot="+shot, "--window-size=1400,1900", "--hide-scrollbars")
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 20<<10 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("screenshot %s: %d bytes, not a rendered page", shot, len(png))
	}
}
