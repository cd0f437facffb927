package sqllogic

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sinkRecord is one record of a sink topic.
type sinkRecord struct {
	key, value string
	tombstone  bool
}

// readTopic reads every committed record of topic (read_committed) until
// it has seen the partitions' last stable offsets.
func readTopic(t testing.TB, addr, topic string) []sinkRecord {
	t.Helper()
	cl := kafkaClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	ends := map[int32]int64{}
	admin := kafkaClient(t, addr)
	for p := int32(0); ; p++ {
		end, err := lastStable(admin, topic, p)
		if err != nil {
			break
		}
		ends[p] = end
	}
	next := map[int32]int64{}
	done := func() bool {
		for p, e := range ends {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	var out []sinkRecord
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (at %v of %v)", topic, ctx.Err(), next, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			out = append(out, sinkRecord{key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
		})
	}
	return out
}

// lastStable is a partition's last stable offset (an error if it does not exist).
func lastStable(cl *kgo.Client, topic string, p int32) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A metadata check first: ListOffsets for a missing partition errors.
	var end int64 = -1
	var err error
	offs := cl.RequestSharded(ctx, listOffsetsReq(topic, p))
	for _, sh := range offs {
		if sh.Err != nil {
			err = sh.Err
			continue
		}
		end, err = parseListOffsets(sh.Resp, p)
	}
	return end, err
}

// upsertState applies an upsert-json topic: key -> last value, tombstones delete.
func upsertState(recs []sinkRecord) map[string]string {
	m := map[string]string{}
	for _, r := range recs {
		if r.tombstone {
			delete(m, r.key)
		} else {
			m[r.key] = r.value
		}
	}
	return m
}

// viewAsUpsert reads a view (user_id, n) as the JSON key/value pairs an
// upsert-json sink writes for it.
func viewAsUpsert(t testing.TB, c *pgx.Conn, q string) map[string]string {
	t.Helper()
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var u, n int64
		if err := rows.Scan(&u, &n); err != nil {
			t.Fatal(err)
		}
		m[fmt.Sprintf(`{"user_id":%d}`, u)] = fmt.Sprintf(`{"user_id":%d,"n":%d}`, u, n)
	}
	return m
}

func sameMap(a, b map[string]string) string {
	var diff []string
	for k, v := range a {
		if b[k] != v {
			diff = append(diff, fmt.Sprintf("%s: topic %q, view %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: topic none, view %q", k, v))
		}
	}
	sort.Strings(diff)
	return strings.Join(diff, "\n")
}

// waitSinkEquals polls until the upsert topic's state equals the view.
func waitSinkEquals(t testing.TB, c *pgx.Conn, addr, topic, q string) []sinkRecord {
	t.Helper()
	start := time.Now()
	for {
		recs := readTopic(t, addr, topic)
		diff := sameMap(upsertState(recs), viewAsUpsert(t, c, q))
		if diff == "" {
			t.Logf("%s equals the view after %v (%d records)", topic, time.Since(start).Round(time.Millisecond), len(recs))
			return recs
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("%s never equalled the view:\n%s", topic, diff)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkOnce: in a debezium topic over a count view, each key's counts go
// strictly up; a change sent twice would repeat one.
func checkOnce(t testing.TB, recs []sinkRecord) {
	t.Helper()
	last := map[string]int64{}
	for _, r := range recs {
		var ev struct {
			After *struct {
				N int64 `json:"n"`
			} `json:"after"`
			Op string `json:"op"`
		}
		if err := json.Unmarshal([]byte(r.value), &ev); err != nil {
			t.Fatalf("record %q: %v", r.value, err)
		}
		if ev.After == nil {
			continue
		}
		if prev, ok := last[r.key]; ok && ev.After.N <= prev {
			t.Fatalf("key %s: count %d after %d: a change was sent twice", r.key, ev.After.N, prev)
		}
		last[r.key] = ev.After.N
	}
}

// TestKafkaSink: upsert-json and debezium-json sinks over a GROUP BY view
// fed by a Kafka source; 'json' refused over a view that updates rows;
// SHOW SINKS and DROP SINK; the sink topics equal the view, each change
// once, across STOP JOB WITH SAVEPOINT / START JOB.
func TestKafkaSink(t *testing.T) {
	_, addr := startKafka(t, 2, "clicks", "counts", "changes", "raw")
	cl := kafkaClient(t, addr)
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c,
		fmt.Sprintf(`CREATE SOURCE clicks (user_id BIGINT, url VARCHAR) WITH (connector = 'kafka', topic = 'clicks',
		  properties.bootstrap.servers = '%s')`, addr),
		"CREATE MATERIALIZED VIEW per_user AS SELECT user_id, count(*) AS n FROM clicks GROUP BY user_id",
		"CREATE MATERIALIZED VIEW urls AS SELECT user_id, url FROM clicks WHERE user_id < 3")
	batch := func(from, n int) []string {
		var v []string
		for i := from; i < from+n; i++ {
			v = append(v, fmt.Sprintf(`{"user_id": %d, "url": "/%d"}`, i%20, i))
		}
		return v
	}
	produce(t, cl, "clicks", batch(0, 500), nil)
	waitQuery(t, c, "SELECT sum(n) FROM per_user", "500")
	with := func(topic, format string) string {
		return fmt.Sprintf("WITH (connector = 'kafka', topic = '%s', properties.bootstrap.servers = '%s', format = '%s')", topic, addr, format)
	}
	execAll(t, c, "CREATE SINK counts_out FROM per_user "+with("counts", "upsert-json"),
		"CREATE SINK changes_out FROM per_user "+with("changes", "debezium-json"),
		"CREATE SINK raw_out FROM urls "+with("raw", "json"))
	_, err := c.Exec(context.Background(), "CREATE SINK bad FROM per_user "+with("raw", "json"))
	wantCode(t, "json over a GROUP BY view", err, "0A000")
	_, err = c.Exec(context.Background(), "CREATE SINK bad FROM per_user "+with("raw", "avro"))
	wantCode(t, "format avro", err, "22023")
	_, err = c.Exec(context.Background(), "CREATE SINK bad FROM per_user "+with("nope", "upsert-json"))
	wantCode(t, "missing topic", err, "42704")
	_, err = c.Exec(context.Background(), "CREATE SINK counts_out FROM per_user "+with("counts", "upsert-json"))
	wantCode(t, "duplicate sink", err, "42710")
	_, err = c.Exec(context.Background(), "DROP MATERIALIZED VIEW per_user")
	wantCode(t, "drop a view a sink reads", err, "2BP01")

	produce(t, cl, "clicks", batch(500, 500), nil)
	waitQuery(t, c, "SELECT sum(n) FROM per_user", "1000")
	waitSinkEquals(t, c, addr, "counts", "SELECT user_id, n FROM per_user")
	checkOnce(t, readTopic(t, addr, "changes"))
	rows := mustRows(t, c, "SHOW SINKS")
	t.Logf("SHOW SINKS:\n%s", strings.Join(rows, "\n"))
	if len(rows) != 3 || !strings.Contains(rows[0], "RUNNING") {
		t.Fatalf("SHOW SINKS: %v", rows)
	}

	// STOP JOB WITH SAVEPOINT / START JOB: the sink goes on, nothing twice.
	execAll(t, c, "STOP JOB per_user WITH SAVEPOINT sp1")
	produce(t, cl, "clicks", batch(1000, 300), nil)
	execAll(t, c, "START JOB per_user")
	waitQuery(t, c, "SELECT sum(n) FROM per_user", "1300")
	waitSinkEquals(t, c, addr, "counts", "SELECT user_id, n FROM per_user")
	checkOnce(t, readTopic(t, addr, "changes"))
	var raw int
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if raw = len(readTopic(t, addr, "raw")); raw == 195 {
			break
		}
	}
	if raw != 195 { // users 0, 1, 2 of 1300 clicks: 65 each
		t.Fatalf("the json sink has %d records, want 195", raw)
	}
	execAll(t, c, "DROP SINK raw_out", "DROP SINK IF EXISTS raw_out")
	if rows := mustRows(t, c, "SHOW SINKS"); len(rows) != 2 {
		t.Fatalf("SHOW SINKS after DROP SINK: %v", rows)
	}
}

// TestKafkaKill9: kill -9 of streamdb while a Kafka source feeds a view and
// sinks send its changes, five times, plus a crash between a Kafka commit
// and the sink recording it (failpoint): the view ends equal to the
// topic's contents, the upsert topic equals the view, and the debezium
// topic (read_committed) holds each change exactly once.
func TestKafkaKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kill -9 loop")
	}
	_, addr := startKafka(t, 2, "clicks", "counts", "changes")
	cl := kafkaClient(t, addr)
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	// The first process crashes right after its first Kafka commit, before
	// it notes the position: the restart must find it in the topic.
	srv := startServer(t, bin, []string{"STREAMDB_FAILPOINTS=changes_out:sink_postcommit:2:panic"}, "")
	c := srv.Conn(t)
	execAll(t, c, "SET checkpoint.interval = '200ms'",
		fmt.Sprintf(`CREATE SOURCE clicks (user_id BIGINT) WITH (connector = 'kafka', topic = 'clicks',
		  properties.bootstrap.servers = '%s')`, addr),
		"CREATE MATERIALIZED VIEW per_user AS SELECT user_id, count(*) AS n FROM clicks GROUP BY user_id",
		fmt.Sprintf("CREATE SINK counts_out FROM per_user WITH (connector = 'kafka', topic = 'counts', properties.bootstrap.servers = '%s', format = 'upsert-json')", addr))
	_, _ = c.Exec(context.Background(), fmt.Sprintf("CREATE SINK changes_out FROM per_user WITH (connector = 'kafka', topic = 'changes', properties.bootstrap.servers = '%s', format = 'debezium-json')", addr))
	total := 0
	send := func(n int) {
		var v []string
		for i := 0; i < n; i++ {
			v = append(v, fmt.Sprintf(`{"user_id": %d}`, (total+i)%50))
		}
		produce(t, cl, "clicks", v, nil)
		total += n
	}
	send(200)
	// Wait for the failpoint's crash, then go on without failpoints.
	for deadline := time.Now().Add(2 * time.Minute); srv.running() && time.Now().Before(deadline); {
		send(50)
		time.Sleep(100 * time.Millisecond)
	}
	if srv.running() {
		t.Fatal("the failpoint did not crash streamdb")
	}
	dir := srv.DataDir()
	srv = StartServer(t, dir)
	for round := 0; round < 5; round++ {
		send(2000)
		time.Sleep(time.Duration(300+200*round) * time.Millisecond)
		srv.Kill9()
		send(500)
		srv.Restart(t)
	}
	c = srv.Conn(t)
	waitQuery(t, c, "SELECT sum(n), count(*) FROM per_user", fmt.Sprintf("%d 50", total))
	waitSinkEquals(t, c, addr, "counts", "SELECT user_id, n FROM per_user")
	start := time.Now()
	for {
		recs := readTopic(t, addr, "changes")
		checkOnce(t, recs)
		last := map[string]int64{}
		for _, r := range recs {
			var ev struct {
				After struct {
					N int64 `json:"n"`
				} `json:"after"`
			}
			_ = json.Unmarshal([]byte(r.value), &ev)
			last[r.key] = ev.After.N
		}
		var sum int64
		for _, n := range last {
			sum += n
		}
		if sum == int64(total) {
			t.Logf("changes: %d records, each once; counts sum to %d", len(recs), sum)
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("the debezium topic's last counts sum to %d, want %d", sum, total)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func listOffsetsReq(topic string, p int32) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func parseListOffsets(resp kmsg.Response, p int32) (int64, error) {
	r := resp.(*kmsg.ListOffsetsResponse)
	for _, t := range r.Topics {
		for _, rp := range t.Partitions {
			if rp.Partition == p {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return 0, err
				}
				return rp.Offset, nil
			}
		}
	}
	return 0, fmt.Errorf("partition %d not in the answer", p)
}

// debeziumReplay applies a debezium-json topic (c, u, d) to a map from key
// to row and fails the test at the first record that does not follow from
// what came before: a "c" for a key that has a row, a "u" or "d" whose
// before is not the key's row (a change skipped or sent twice, or an
// update that lost its before-image). It returns the rows and the number
// of updates.
func debeziumReplay(t testing.TB, recs []sinkRecord) (map[string]string, int) {
	t.Helper()
	state := map[string]string{}
	updates := 0
	for i, r := range recs {
		var ev struct {
			Before, After json.RawMessage
			Op            string
		}
		if err := json.Unmarshal([]byte(r.value), &ev); err != nil {
			t.Fatalf("record %d %q: %v", i, r.value, err)
		}
		before, had := state[r.key]
		switch ev.Op {
		case "c":
			if had {
				t.Fatalf("record %d: create of key %s, which has %s: a change was sent twice", i, r.key, before)
			}
		case "u", "d":
			if !had || string(ev.Before) != before {
				t.Fatalf("record %d: %s of key %s with before %s, but the key has %q: a change was skipped, doubled or lost its before-image",
					i, ev.Op, r.key, ev.Before, before)
			}
			updates += map[string]int{"u": 1}[ev.Op]
		default:
			t.Fatalf("record %d: op %q", i, ev.Op)
		}
		if ev.Op == "d" {
			delete(state, r.key)
		} else {
			state[r.key] = string(ev.After)
		}
	}
	return state, updates
}

// TestKafkaSinkFailpoints kills the real binary (SIGKILL from a failpoint)
// at each step of a sink's two-phase commit, with the unsynced tail of
// Pebble's WAL lost at the kill as on a power loss
// (STREAMDB_LOSE_UNSYNCED_WAL) and a sink transaction limit of 3 changelog
// rows (STREAMDB_SINK_TXN_ROWS), so most updates straddle it:
//   - sink_postcommit: after a Kafka commit, with later epochs not synced;
//   - sink_durable: after a checkpoint's sync, before anything is sent;
//   - sink_precommit: a transaction written, not committed;
//   - sink_recover: during recovery after the first crash.
//
// The view reads a Kafka source, so only checkpoints sync the WAL. Then,
// with more records after the restart, a read_committed consumer of the
// debezium topic sees every change once, each update with its
// before-image, and both topics end equal to the view, which equals the
// counts of what was produced.
func TestKafkaSinkFailpoints(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"STREAMDB_LOSE_UNSYNCED_WAL=1", "STREAMDB_SINK_TXN_ROWS=3"}
	for _, tc := range []struct{ stage, recover string }{
		{"sink_postcommit:25", ""},
		{"sink_durable:3", ""},
		{"sink_precommit:25", ""},
		{"sink_postcommit:25", "sink_recover:1"},
	} {
		name := strings.Split(tc.stage, ":")[0]
		if tc.recover != "" {
			name = "sink_recover"
		}
		t.Run(name, func(t *testing.T) {
			_, addr := startKafka(t, 1, "clicks", "up", "dbz")
			cl := kafkaClient(t, addr)
			fp := fmt.Sprintf("STREAMDB_FAILPOINTS=up_out:%[1]s:kill,dbz_out:%[1]s:kill", tc.stage)
			srv := startServer(t, bin, append([]string{fp}, base...), "")
			c := srv.Conn(t)
			with := func(topic, format string) string {
				return fmt.Sprintf("WITH (connector = 'kafka', topic = '%s', properties.bootstrap.servers = '%s', format = '%s')", topic, addr, format)
			}
			// A Kafka source: nothing but checkpoints syncs the WAL, so
			// the epochs between them are lost at the kill.
			execAll(t, c, "SET checkpoint.interval = '500ms'",
				fmt.Sprintf(`CREATE SOURCE clicks (user_id BIGINT) WITH (connector = 'kafka', topic = 'clicks',
				  properties.bootstrap.servers = '%s')`, addr),
				"CREATE MATERIALIZED VIEW per_user AS SELECT user_id, count(*) AS n FROM clicks GROUP BY user_id",
				"CREATE SINK up_out FROM per_user "+with("up", "upsert-json"),
				"CREATE SINK dbz_out FROM per_user "+with("dbz", "debezium-json"))
			// want is the oracle: the view's rows from what was produced.
			want := map[string]string{}
			counts := map[int]int{}
			row := 0
			send := func(n int) {
				var vals []string
				for i := 0; i < n; i++ {
					u := (row * 7) % 13
					vals = append(vals, fmt.Sprintf(`{"user_id": %d}`, u))
					counts[u]++
					want[fmt.Sprintf(`{"user_id":%d}`, u)] = fmt.Sprintf(`{"user_id":%d,"n":%d}`, u, counts[u])
					row++
				}
				produce(t, cl, "clicks", vals, nil)
			}
			// Feed the source until the failpoint kills the server (bounded).
			for deadline := time.Now().Add(time.Minute); srv.running() && time.Now().Before(deadline); {
				send(10)
				time.Sleep(20 * time.Millisecond)
			}
			if srv.running() {
				t.Fatalf("failpoint %s did not kill streamdb", tc.stage)
			}
			if tc.recover != "" {
				// The next process is killed while its sinks recover.
				cmd := exec.Command(bin, "--listen", srv.Addr(), "--data-dir", srv.DataDir())
				cmd.Env = append(append(os.Environ(), base...),
					fmt.Sprintf("STREAMDB_FAILPOINTS=up_out:%[1]s:kill,dbz_out:%[1]s:kill", tc.recover))
				done := make(chan error, 1)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					if !strings.Contains(fmt.Sprint(err), "killed") {
						t.Fatalf("streamdb ended with %v during recovery, want killed by the failpoint", err)
					}
				case <-time.After(time.Minute):
					_ = cmd.Process.Kill()
					t.Fatal("failpoint sink_recover did not kill streamdb")
				}
			}
			srv.env = base
			srv.Restart(t)
			c = srv.Conn(t)
			send(50)
			start := time.Now()
			for {
				view := viewAsUpsert(t, c, "SELECT user_id, n FROM per_user")
				dbz, updates := debeziumReplay(t, readTopic(t, addr, "dbz"))
				d1, d2, d3 := sameMap(view, want), sameMap(upsertState(readTopic(t, addr, "up")), view), sameMap(dbz, view)
				if d1 == "" && d2 == "" && d3 == "" {
					if updates == 0 {
						t.Fatal("no update reached the debezium topic")
					}
					t.Logf("after %v: %d keys, %d rows, %d updates, each change once", time.Since(start).Round(time.Millisecond), len(view), row, updates)
					return
				}
				if time.Since(start) > time.Minute {
					t.Fatalf("view vs what was produced:\n%s\nupsert topic vs view:\n%s\ndebezium topic vs view:\n%s", d1, d2, d3)
				}
				execAll(t, c, "CHECKPOINT")
			}
		})
	}
}
