package sqllogic

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL CDC figures (docs/benchmarks), against private PostgreSQL 15
// clusters of pg_test.go (fsync off, wal_level = logical):
//
//	nice -n 5 go test ./tests/sqllogic -run XXX -bench 'PostgresCDC|PostgresLogicalReplication' -benchtime 1x -timeout 30m
//
// STREAMDB_PG_BENCH_ROWS sets the rows per run (default 300000). The
// rows (id, k, v) go into PostgreSQL by COPY in transactions of
// cdcBenchChunk rows. phase=stream: the rows are COPYed after the
// replication is set up, timed from the first COPY until the far side
// holds every row; phase=snapshot: the rows are in the table before,
// timed from CREATE SOURCE / CREATE SUBSCRIPTION until the far side holds
// every row. BenchmarkPostgresCDC's far side is a streamdb view
// SELECT k, count(*) FROM the CDC source GROUP BY k (1000 groups), done
// when its counts sum to the rows; BenchmarkPostgresLogicalReplication's
// is PostgreSQL's own logical replication (pgoutput, a subscription in a
// second cluster), done when the subscriber's table has every row.

const cdcBenchChunk = 10000

const cdcBenchTable = "CREATE TABLE t (id bigint PRIMARY KEY, k bigint, v bigint)"

func startCDCBenchPG(b *testing.B) (*PG, *pgx.Conn) {
	p := StartPGConf(b, "wal_level=logical", "max_replication_slots=8", "max_wal_senders=8")
	return p, p.Conn(b)
}

// cdcBenchLoad COPYs the n rows into t in transactions of cdcBenchChunk rows.
func cdcBenchLoad(b *testing.B, pg *pgx.Conn, data []byte) {
	for len(data) > 0 {
		end, lines := 0, 0
		for end < len(data) && lines < cdcBenchChunk {
			if data[end] == '\n' {
				lines++
			}
			end++
		}
		benchCopy(b, pg, "t", data[:end])
		data = data[end:]
	}
}

// cdcBenchWait polls probe (one bigint) on c until it is n and returns
// the rows/s since start.
func cdcBenchWait(b *testing.B, c *pgx.Conn, probe string, n int, start time.Time) float64 {
	for {
		var got *int64
		err := c.QueryRow(context.Background(), probe).Scan(&got)
		if err == nil && got != nil && *got == int64(n) {
			return float64(n) / time.Since(start).Seconds()
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("%d rows did not arrive in 10 minutes (last %v, %v)", n, got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func BenchmarkPostgresCDC(b *testing.B) {
	for _, phase := range []string{"stream", "snapshot"} {
		b.Run("phase="+phase, func(b *testing.B) {
			p, pg := startCDCBenchPG(b)
			n := pgBenchRows()
			data := benchCopyText(n)
			host, port, _ := net.SplitHostPort(p.addr)
			for i := 0; i < b.N; i++ {
				benchExec(b, pg, "DROP PUBLICATION IF EXISTS pub", "DROP TABLE IF EXISTS t", cdcBenchTable, "CREATE PUBLICATION pub FOR TABLE t")
				srv := StartServer(b, "")
				c := srv.Conn(b)
				create := []string{
					"CREATE SOURCE t_cdc " + fmt.Sprintf("WITH (connector = 'postgres-cdc', hostname = '%s', port = '%s', username = 'postgres', password = 'x', "+
						"database.name = 'postgres', schema.name = 'public', table.name = 't', slot.name = 'bench_slot', publication.name = 'pub')", host, port),
					"CREATE MATERIALIZED VIEW per_k AS SELECT k, count(*) AS n FROM t_cdc GROUP BY k",
				}
				var start time.Time
				if phase == "snapshot" {
					cdcBenchLoad(b, pg, data)
					start = time.Now()
					benchExec(b, c, create...)
				} else {
					benchExec(b, c, create...)
					start = time.Now()
					cdcBenchLoad(b, pg, data)
				}
				b.ReportMetric(cdcBenchWait(b, c, "SELECT CAST(sum(n) AS BIGINT) FROM per_k", n, start), "rows/s")
				benchExec(b, c, "DROP SOURCE t_cdc CASCADE")
				srv.Stop()
			}
		})
	}
}

func BenchmarkPostgresLogicalReplication(b *testing.B) {
	for _, phase := range []string{"stream", "snapshot"} {
		b.Run("phase="+phase, func(b *testing.B) {
			p, pg := startCDCBenchPG(b)
			_, sub := startCDCBenchPG(b)
			n := pgBenchRows()
			data := benchCopyText(n)
			host, port, _ := net.SplitHostPort(p.addr)
			create := fmt.Sprintf("CREATE SUBSCRIPTION sub CONNECTION 'host=%s port=%s user=postgres dbname=postgres' PUBLICATION pub WITH (copy_data = %t)",
				host, port, phase == "snapshot")
			for i := 0; i < b.N; i++ {
				benchExec(b, sub, "DROP SUBSCRIPTION IF EXISTS sub", "DROP TABLE IF EXISTS t", cdcBenchTable)
				benchExec(b, pg, "DROP PUBLICATION IF EXISTS pub", "DROP TABLE IF EXISTS t", cdcBenchTable, "CREATE PUBLICATION pub FOR TABLE t")
				var start time.Time
				if phase == "snapshot" {
					cdcBenchLoad(b, pg, data)
					start = time.Now()
					benchExec(b, sub, create)
				} else {
					benchExec(b, sub, create)
					// The subscription's worker must hold the slot before the
					// rows go in, as streamdb's source does when CREATE returns.
					for deadline := time.Now().Add(time.Minute); ; {
						var active bool
						if err := pg.QueryRow(context.Background(), "SELECT coalesce(bool_or(active), false) FROM pg_replication_slots WHERE slot_name = 'sub'").Scan(&active); err != nil {
							b.Fatal(err)
						}
						if active {
							break
						}
						if time.Now().After(deadline) {
							b.Fatal("the subscription's worker never took its slot")
						}
						time.Sleep(20 * time.Millisecond)
					}
					start = time.Now()
					cdcBenchLoad(b, pg, data)
				}
				b.ReportMetric(cdcBenchWait(b, sub, "SELECT count(*) FROM t", n, start), "rows/s")
				benchExec(b, sub, "DROP SUBSCRIPTION sub")
			}
		})
	}
}
