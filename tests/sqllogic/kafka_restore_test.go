package sqllogic

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// debeziumState applies a debezium-json topic as a consumer would and
// checks it is a consistent changelog: a "c" for a key the consumer does
// not have, a "u" or "d" whose before is what the consumer has.
func debeziumState(t testing.TB, recs []sinkRecord) (map[string]string, error) {
	t.Helper()
	m := map[string]string{}
	for i, r := range recs {
		var ev struct {
			Before, After json.RawMessage
			Op            string
		}
		if err := json.Unmarshal([]byte(r.value), &ev); err != nil {
			t.Fatalf("record %q: %v", r.value, err)
		}
		cur, had := m[r.key]
		switch ev.Op {
		case "c":
			if had {
				return nil, fmt.Errorf("record %d: create of %s, which the consumer has (%s)", i, r.key, cur)
			}
			m[r.key] = string(ev.After)
		case "u", "d":
			if !had || cur != string(ev.Before) {
				return nil, fmt.Errorf("record %d: %s of %s with before %s, the consumer has %q", i, ev.Op, r.key, ev.Before, cur)
			}
			if ev.Op == "u" {
				m[r.key] = string(ev.After)
			} else {
				delete(m, r.key)
			}
		default:
			return nil, fmt.Errorf("record %d: op %q", i, ev.Op)
		}
	}
	return m, nil
}

// viewAsDebeziumState is the view (user_id, n) as a debezium consumer's
// state: key -> the row.
func viewAsDebeziumState(t testing.TB, c *pgx.Conn, q string) map[string]string {
	return viewAsUpsert(t, c, q)
}

// waitDebeziumEquals polls until the debezium topic, applied, equals the
// view; it fails at once if the topic is not a consistent changelog.
func waitDebeziumEquals(t testing.TB, c *pgx.Conn, addr, topic, q string) {
	t.Helper()
	start := time.Now()
	for {
		recs := readTopic(t, addr, topic)
		got, err := debeziumState(t, recs)
		if err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		diff := sameMap(got, viewAsDebeziumState(t, c, q))
		if diff == "" {
			t.Logf("%s equals the view after %v (%d records)", topic, time.Since(start).Round(time.Millisecond), len(recs))
			return
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("%s never equalled the view:\n%s", topic, diff)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitRowsCovered polls until every row of the append-only view (off) is
// in the json topic ({"off": n}) at least once.
func waitRowsCovered(t testing.TB, c *pgx.Conn, addr, topic, q string) {
	t.Helper()
	start := time.Now()
	for {
		have := map[string]bool{}
		for _, r := range readTopic(t, addr, topic) {
			have[r.value] = true
		}
		rows, err := plainRows(c, q)
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		for _, off := range rows {
			if v := fmt.Sprintf(`{"off":%s}`, off); !have[v] {
				missing = append(missing, v)
			}
		}
		if len(missing) == 0 {
			t.Logf("%s has each of the view's %d rows after %v", topic, len(rows), time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > 2*time.Minute {
			sort.Strings(missing)
			t.Fatalf("%s misses %d of the view's rows: %s", topic, len(missing), strings.Join(missing[:min(10, len(missing))], " "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestKafkaRestoreSink: RESTORE of a view that sinks read. The view's
// changes after the checkpoint belong to an abandoned timeline, so the
// sinks start over from the restored view, as a rebuilt dependent view
// does: an upsert-json and a debezium-json sink send the compensating
// changes (tombstones / deletes for keys the restored view no longer has,
// updates for rows that differ), so a read_committed consumer ends with
// exactly the view's contents and the debezium topic stays a consistent
// changelog; a json sink (append-only) goes on from the restore and
// skips nothing. The source's records after the checkpoint are deleted
// before the RESTORE (as retention would), so the restored view cannot
// simply re-derive the abandoned rows. streamdb is killed -9 right after
// the RESTORE, inside the sinks' start-over window.
func TestKafkaRestoreSink(t *testing.T) {
	_, addr := startKafka(t, 1, "clicks", "counts", "changes", "rows")
	cl := kafkaClient(t, addr)
	// send produces n clicks of users base..base+9.
	send := func(base, n int) {
		var v []string
		for i := 0; i < n; i++ {
			v = append(v, fmt.Sprintf(`{"user_id": %d}`, base+i%10))
		}
		produce(t, cl, "clicks", v, nil)
	}
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, "SET checkpoint.interval = '200ms'",
		fmt.Sprintf(`CREATE SOURCE clicks (user_id BIGINT, _kafka_offset BIGINT) WITH (connector = 'kafka', topic = 'clicks',
		  properties.bootstrap.servers = '%s')`, addr),
		"CREATE MATERIALIZED VIEW per_user AS SELECT user_id, count(*) AS n FROM clicks GROUP BY user_id",
		"CREATE MATERIALIZED VIEW offs AS SELECT _kafka_offset AS off FROM clicks",
		fmt.Sprintf("CREATE SINK counts_out FROM per_user WITH (connector = 'kafka', topic = 'counts', properties.bootstrap.servers = '%s', format = 'upsert-json')", addr),
		fmt.Sprintf("CREATE SINK changes_out FROM per_user WITH (connector = 'kafka', topic = 'changes', properties.bootstrap.servers = '%s', format = 'debezium-json')", addr),
		fmt.Sprintf("CREATE SINK rows_out FROM offs WITH (connector = 'kafka', topic = 'rows', properties.bootstrap.servers = '%s', format = 'json')", addr))
	// Users 0..9, then a checkpoint.
	send(0, 100)
	waitQuery(t, c, "SELECT count(*), sum(n) FROM per_user", "10 100")
	waitQuery(t, c, "SELECT count(*) FROM offs", "100")
	execAll(t, c, "CHECKPOINT")
	var ck int64
	if err := c.QueryRow(context.Background(), "SELECT max(id) FROM streamdb_checkpoints WHERE status = 'COMPLETED'").Scan(&ck); err != nil {
		t.Fatal(err)
	}
	// Users 10..19 after it, sent to every sink.
	send(10, 100)
	waitQuery(t, c, "SELECT count(*), sum(n) FROM per_user", "20 200")
	waitSinkEquals(t, c, addr, "counts", "SELECT user_id, n FROM per_user")
	waitDebeziumEquals(t, c, addr, "changes", "SELECT user_id, n FROM per_user")
	waitRowsCovered(t, c, addr, "rows", "SELECT off FROM offs")

	// Retention drops the source's records; the views go back to the
	// checkpoint and cannot read users 10..19 again.
	kafkaDeleteRecords(t, addr, "clicks", 0, 200)
	execAll(t, c, fmt.Sprintf("RESTORE FROM CHECKPOINT %d", ck))
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	waitQuery(t, c, "SELECT count(*), sum(n) FROM per_user", "10 100")
	send(0, 50) // users 0..9 again, at new offsets
	waitQuery(t, c, "SELECT count(*), sum(n) FROM per_user", "10 150")
	waitQuery(t, c, "SELECT count(*) FROM offs", "150")
	waitSinkEquals(t, c, addr, "counts", "SELECT user_id, n FROM per_user")
	waitDebeziumEquals(t, c, addr, "changes", "SELECT user_id, n FROM per_user")
	waitRowsCovered(t, c, addr, "rows", "SELECT off FROM offs")

	// A second RESTORE (the next generation) without a crash; the sinks
	// keep going afterwards.
	execAll(t, c, "CHECKPOINT")
	if err := c.QueryRow(context.Background(), "SELECT max(id) FROM streamdb_checkpoints WHERE status = 'COMPLETED'").Scan(&ck); err != nil {
		t.Fatal(err)
	}
	send(10, 50)
	waitQuery(t, c, "SELECT sum(n) FROM per_user", "200")
	waitSinkEquals(t, c, addr, "counts", "SELECT user_id, n FROM per_user")
	kafkaDeleteRecords(t, addr, "clicks", 0, 300)
	execAll(t, c, fmt.Sprintf("RESTORE per_user FROM CHECKPOINT %d", ck))
	waitQuery(t, c, "SELECT sum(n) FROM per_user", "150")
	send(0, 10)
	waitQuery(t, c, "SELECT sum(n) FROM per_user", "160")
	waitSinkEquals(t, c, addr, "counts", "SELECT user_id, n FROM per_user")
	waitDebeziumEquals(t, c, addr, "changes", "SELECT user_id, n FROM per_user")
	// STOP JOB WITH SAVEPOINT / START JOB FROM SAVEPOINT goes through
	// RESTORE at the same point: nothing to compensate, and the json sink
	// sends each new row once.
	execAll(t, c, "STOP JOB offs WITH SAVEPOINT sp", "STOP JOB per_user WITH SAVEPOINT sp2")
	send(0, 20)
	execAll(t, c, "START JOB offs FROM SAVEPOINT sp", "START JOB per_user FROM SAVEPOINT sp2")
	waitQuery(t, c, "SELECT count(*) FROM offs", "230")
	waitQuery(t, c, "SELECT sum(n) FROM per_user", "180")
	waitRowsCovered(t, c, addr, "rows", "SELECT off FROM offs")
	waitSinkEquals(t, c, addr, "counts", "SELECT user_id, n FROM per_user")
	waitDebeziumEquals(t, c, addr, "changes", "SELECT user_id, n FROM per_user")
	seen := map[string]int{}
	for _, r := range readTopic(t, addr, "rows") {
		seen[r.value]++
	}
	last, err := plainRows(c, "SELECT off FROM offs ORDER BY off DESC LIMIT 20")
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range last {
		if n := seen[fmt.Sprintf(`{"off":%s}`, off)]; n != 1 {
			t.Errorf("row %s is %d times in the json topic after START JOB FROM SAVEPOINT", off, n)
		}
	}
	// Replacing a view a sink reads is refused, as dropping it is.
	_, err = c.Exec(context.Background(), "CREATE OR REPLACE MATERIALIZED VIEW per_user AS SELECT user_id, count(*) + 1 AS n FROM clicks GROUP BY user_id")
	wantCode(t, "CREATE OR REPLACE under a sink", err, "2BP01")
	_, err = c.Exec(context.Background(), "CREATE OR REPLACE MATERIALIZED VIEW per_user AS SELECT user_id, count(*) AS n FROM clicks GROUP BY user_id FROM SAVEPOINT sp2")
	wantCode(t, "CREATE OR REPLACE ... FROM SAVEPOINT under a sink", err, "2BP01")
	rows, err := plainRows(c, "SHOW SINKS")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if !strings.Contains(r, "RUNNING") {
			t.Errorf("sink not running: %s", r)
		}
	}
}
