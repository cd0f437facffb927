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
