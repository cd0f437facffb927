package sqllogic

import (
	"context"
	"fmt"
	"testing"
)

// TestKafkaLostOffsetsCheckpoint: records past a job's restored offset
// are deleted (retention) while the server is down. After the restart the
// job skips to the log start (the records are gone), so CHECKPOINT
// returns instead of waiting for a position the job can never report, and
// the view goes on with the records produced afterwards.
func TestKafkaLostOffsetsCheckpoint(t *testing.T) {
	_, addr := startKafka(t, 1, "lost")
	cl := kafkaClient(t, addr)
	vals := func(from, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(`{"id": %d}`, from+i)
		}
		return out
	}
	produce(t, cl, "lost", vals(0, 10), nil)
	srv := StartServer(t, "")
	c := srv.Conn(t)
	execAll(t, c, fmt.Sprintf(`CREATE SOURCE s (id BIGINT) WITH (connector = 'kafka', topic = 'lost',
		  properties.bootstrap.servers = '%s', format = 'json', scan.startup.mode = 'earliest')`, addr),
		"CREATE MATERIALIZED VIEW v AS SELECT count(*) AS n, sum(id) AS total FROM s")
	waitQuery(t, c, "SELECT n, total FROM v", "10 45")
	execAll(t, c, "CHECKPOINT")
	srv.Stop()

	produce(t, cl, "lost", vals(10, 10), nil)
	kafkaDeleteRecords(t, addr, "lost", 0, -1) // everything past the checkpoint's offset is gone

	srv.Restart(t)
	c = srv.Conn(t)
	execAll(t, c, "SET statement_timeout = '30s'")
	if _, err := c.Exec(context.Background(), "CHECKPOINT"); err != nil {
		t.Fatalf("CHECKPOINT after the source's records were deleted: %v", err)
	}
	waitQuery(t, c, "SELECT n, total FROM v", "10 45")
	produce(t, cl, "lost", vals(20, 5), nil)
	waitQuery(t, c, "SELECT n, total FROM v", "15 155")
	execAll(t, c, "CHECKPOINT")
	// The ten deleted records are counted where users look, and the
	// count is committed with the job's state: it survives a restart.
	const lost = "SELECT lost_rows FROM streamdb_jobs WHERE name = 'v'"
	waitQuery(t, c, lost, "10")
	srv.Stop()
	srv.Restart(t)
	c = srv.Conn(t)
	waitQuery(t, c, "SELECT n, total FROM v", "15 155")
	waitQuery(t, c, lost, "10")
}
