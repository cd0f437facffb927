package sqllogic

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestKafkaKcat drives the Kafka source and sink with real command-line
// clients against the in-process broker: kcat produces JSON, psql creates
// the source, view and sink and reads the view, and kcat consumes the
// sink's topic in read_committed mode.
func TestKafkaKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kcat is required in CI (.ci/run installs it): %v", err)
		}
		t.Skip("kcat is not installed")
	}
	_, addr := startKafka(t, 1, "clicks", "click_counts")
	srv := StartServer(t, "")
	host, port, _ := net.SplitHostPort(srv.Addr())
	p := &psqlTarget{host: host, port: port}
	kcat := func(stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "kcat", append([]string{"-b", addr}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kcat %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	var msgs []string
	for i := 0; i < 30; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"user_id": %d, "url": "/%d"}`, i%3, i))
	}
	kcat(strings.Join(msgs, "\n")+"\n", "-P", "-t", "clicks")
	res := p.run(t, "", "-v", "ON_ERROR_STOP=1", "-c", fmt.Sprintf(`CREATE SOURCE clicks (user_id BIGINT, url VARCHAR)
		WITH (connector = 'kafka', topic = 'clicks', properties.bootstrap.servers = '%s', format = 'json', scan.startup.mode = 'earliest')`, addr),
		"-c", "CREATE MATERIALIZED VIEW click_counts AS SELECT user_id, count(*) AS n FROM clicks GROUP BY user_id",
		"-c", fmt.Sprintf(`CREATE SINK click_counts_out FROM click_counts
		WITH (connector = 'kafka', topic = 'click_counts', properties.bootstrap.servers = '%s', format = 'upsert-json')`, addr))
	if res.code != 0 {
		t.Fatalf("psql: %s%s", res.stdout, res.stderr)
	}
	want := "0|10\n1|10\n2|10\n"
	var got string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		got = p.run(t, "", "-A", "-t", "-c", "SELECT user_id, n FROM click_counts ORDER BY user_id").stdout
		if got == want {
			break
		}
	}
	if got != want {
		t.Fatalf("psql read the view as %q, want %q", got, want)
	}
	// The last value per key in the sink topic, read_committed.
	wantTopic := `{"user_id":0} {"user_id":0,"n":10}` + "\n" + `{"user_id":1} {"user_id":1,"n":10}` + "\n" + `{"user_id":2} {"user_id":2,"n":10}`
	var last string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out := kcatConsume(t, addr, "-C", "-t", "click_counts", "-X", "isolation.level=read_committed", "-o", "beginning", "-u", "-q", "-f", "%k %s\n")
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if k, v, ok := strings.Cut(l, " "); ok {
				m[k] = v
			}
		}
		var lines []string
		for k, v := range m {
			lines = append(lines, k+" "+v)
		}
		sort.Strings(lines)
		if last = strings.Join(lines, "\n"); last == wantTopic {
			t.Logf("kcat read the sink topic:\n%s", out)
			return
		}
	}
	t.Fatalf("kcat read the sink topic as\n%s\nwant\n%s", last, wantTopic)
}

// kcatConsume runs a kcat consumer for a while and returns what it printed
// (a read_committed consumer's end-of-partition under -e is not relied on:
// it runs until stopped, so it must be given -u: kcat buffers its output
// when stdout is not a terminal, and a stopped kcat prints nothing).
func kcatConsume(t *testing.T, addr string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", append([]string{"-b", addr}, args...)...)
	var out strings.Builder
	cmd.Stdout = &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil && ctx.Err() == nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}
