package sqllogic

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The tail cache (issue 19): a view's job reads the blocks a COPY has just
// staged from memory instead of loading them back from Pebble. It must
// change no result: the view equals its batch query, a rolled-back COPY
// leaves nothing behind, and with the cache off the same COPY gives the
// same view, read from Pebble.

// copyPairs sends rows of (k, v) in text format through pgx.
func copyPairs(t *testing.T, c *pgx.Conn, table string, rows, keys, seed int) {
	t.Helper()
	var buf bytes.Buffer
	for i := 0; i < rows; i++ {
		x := i*7919 + seed
		buf.WriteString(strconv.Itoa(x % keys))
		buf.WriteByte('\t')
		buf.WriteString(strconv.Itoa(x % 1_000_003))
		buf.WriteByte('\n')
	}
	tag, err := c.PgConn().CopyFrom(context.Background(), &buf, "COPY "+table+" FROM STDIN")
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != int64(rows) {
		t.Fatalf("COPY: %s, want %d rows", tag, rows)
	}
}

// viewMatchesBatch waits until view equals the batch query want.
func viewMatchesBatch(t *testing.T, c *pgx.Conn, view, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		execAll(t, c, "CHECKPOINT")
		got, err := queryRows(c, "SELECT * FROM "+view)
		if err != nil {
			t.Fatal(err)
		}
		exp, err := queryRows(c, want)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		slices.Sort(exp)
		if slices.Equal(got, exp) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("view %s never equalled its batch query: %d rows against %d", view, len(got), len(exp))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCopyTailCache(t *testing.T) {
	const rows, keys = 1_500_000, 1000 // about 16 MB of text: staged
	const batch = "SELECT k, count(*) AS c, sum(v) AS s FROM s GROUP BY k"
	for _, cacheMB := range []string{"32", "0"} {
		t.Run("tail-cache-mb="+cacheMB, func(t *testing.T) {
			httpAddr, err := freeAddr()
			if err != nil {
				t.Fatal(err)
			}
			srv := StartServer(t, "", "--http", httpAddr, "--tail-cache-mb", cacheMB)
			c := srv.Conn(t)
			execAll(t, c,
				"CREATE TABLE s (k BIGINT, v BIGINT)",
				"CREATE MATERIALIZED VIEW mv AS "+batch)
			copyPairs(t, c, "s", rows, keys, 1)
			viewMatchesBatch(t, c, "mv", batch)
			m := scrape(t, httpAddr)
			hits := mustMetric(t, m, "streamdb_tail_cache_hits_total")
			misses := mustMetric(t, m, "streamdb_tail_cache_misses_total")
			t.Logf("after the COPY: %v blocks from the tail cache, %v from Pebble, %v bytes held",
				hits, misses, mustMetric(t, m, "streamdb_tail_cache_bytes"))
			if cacheMB == "0" {
				if hits != 0 {
					t.Fatalf("%v tail cache hits with the cache off", hits)
				}
				return
			}
			// The job read the COPY's blocks from memory (the oracle's
			// scans after it found them gone, each read once).
			if hits == 0 {
				t.Fatal("the view's job read no block of the COPY from the tail cache")
			}
			if b := mustMetric(t, m, "streamdb_tail_cache_bytes"); b != 0 {
				t.Fatalf("the tail cache holds %v bytes after its only reader read everything", b)
			}

			// A COPY in a transaction is cached until COMMIT or ROLLBACK;
			// a ROLLBACK leaves neither rows nor cached blocks.
			t0 := time.Now()
			execAll(t, c, "BEGIN")
			copyPairs(t, c, "s", rows, keys, 2)
			t.Logf("COPY in a transaction: %v", time.Since(t0))
			if b := mustMetric(t, scrape(t, httpAddr), "streamdb_tail_cache_bytes"); b == 0 {
				t.Fatal("a staged COPY in a transaction is not in the tail cache")
			}
			execAll(t, c, "ROLLBACK")
			if b := mustMetric(t, scrape(t, httpAddr), "streamdb_tail_cache_bytes"); b != 0 {
				t.Fatalf("the tail cache holds %v bytes of a rolled-back COPY", b)
			}
			// A committed one reaches the view like any other.
			execAll(t, c, "BEGIN")
			copyPairs(t, c, "s", rows, keys, 3)
			execAll(t, c, "COMMIT")
			t0 = time.Now()
			viewMatchesBatch(t, c, "mv", batch)
			t.Logf("view complete %v after COMMIT", time.Since(t0))
			var n int64
			if err := c.QueryRow(context.Background(), "SELECT sum(c)::BIGINT FROM mv").Scan(&n); err != nil || n != 2*rows {
				t.Fatalf("the view counts %d rows (%v), want %d", n, err, 2*rows)
			}
			if h := mustMetric(t, scrape(t, httpAddr), "streamdb_tail_cache_hits_total"); h <= hits {
				t.Fatalf("the committed COPY's blocks were not read from the tail cache (%v hits, %v before)", h, hits)
			}
		})
	}
}

// TestCopyTailCacheKill9: kill -9 right after a staged COPY returns, while
// the view's job reads the COPY's blocks (from the tail cache or, with the
// cache off, from Pebble) and before the checkpoint that covers them, and
// again around and right after the first CHECKPOINT to cover them: after
// each restart the view equals its batch query, and both hold every row
// copied exactly once.
func TestCopyTailCacheKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 3M rows copied, six restarts")
	}
	const rows, keys = 1_000_000, 1000 // about 11 MB of text: staged
	const batch = "SELECT k, count(*) AS c, sum(v) AS s FROM s GROUP BY k"
	for _, args := range [][]string{nil, {"--tail-cache-mb", "0"}} {
		name := "tail-cache-mb=default"
		if args != nil {
			name = "tail-cache-mb=0"
		}
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			srv := StartServer(t, t.TempDir(), args...)
			c := srv.Conn(t)
			execAll(t, c,
				"CREATE TABLE s (k BIGINT, v BIGINT)",
				"CREATE MATERIALIZED VIEW mv AS "+batch)
			var n, sum int64 // what the COPYs so far sent
			copied := func(seed int) {
				t.Helper()
				copyPairs(t, c, "s", rows, keys, seed)
				for i := 0; i < rows; i++ {
					sum += int64((i*7919 + seed) % 1_000_003)
				}
				n += rows
			}
			check := func(when string) {
				t.Helper()
				viewMatchesBatch(t, c, "mv", batch)
				var gotN, gotSum, viewN, viewSum int64
				if err := c.QueryRow(context.Background(), "SELECT count(*), sum(v)::BIGINT FROM s").Scan(&gotN, &gotSum); err != nil {
					t.Fatal(err)
				}
				if err := c.QueryRow(context.Background(), "SELECT sum(c)::BIGINT, sum(s)::BIGINT FROM mv").Scan(&viewN, &viewSum); err != nil {
					t.Fatal(err)
				}
				if gotN != n || gotSum != sum || viewN != n || viewSum != sum {
					t.Fatalf("%s: s holds %d rows summing to %d, mv counts %d summing to %d; want %d rows summing to %d",
						when, gotN, gotSum, viewN, viewSum, n, sum)
				}
			}
			// kill -9 as soon as the COPY returns: the job has at most
			// begun on its blocks, no checkpoint covers them.
			copied(1)
			srv.Kill9()
			srv.Restart(t)
			c = srv.Conn(t)
			check("after kill -9 right after the COPY")
			// kill -9 with a CHECKPOINT (the first to cover the COPY) sent
			// on another connection: it may not have reached the server,
			// be under way, or be done.
			copied(2)
			ck := srv.Conn(t)
			done := make(chan error, 1)
			go func() {
				_, err := ck.Exec(context.Background(), "CHECKPOINT")
				done <- err
			}()
			srv.Kill9()
			t.Logf("the CHECKPOINT sent as the server was killed: %v", <-done)
			srv.Restart(t)
			c = srv.Conn(t)
			check("after kill -9 around a CHECKPOINT")
			// kill -9 right after the first CHECKPOINT to cover the COPY:
			// the restarted job must not read the COPY's blocks again.
			copied(3)
			execAll(t, c, "CHECKPOINT")
			srv.Kill9()
			srv.Restart(t)
			c = srv.Conn(t)
			check("after kill -9 right after a CHECKPOINT")
			t.Logf("%d rows in three COPYs, three kills -9: %v", n, time.Since(start).Round(time.Millisecond))
		})
	}
}
