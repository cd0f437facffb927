package sql

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Benchmarks of COPY parsing and of the engine end to end (no wire).
//
//	go test ./sql/ -run '^$' -bench . -benchtime 5x

const (
	copyBenchRows  = 2_000_000
	copyBenchChunk = 64 << 10 // CopyData payloads as psql and pgx send them
)

// copyText is rows of "k\tv\n" with k in [0, keys) and v in [0, 1e6),
// cut into chunks that split lines anywhere, as the wire delivers them.
func copyText(rows, keys int) (data []byte, chunks [][]byte) {
	r := rand.New(rand.NewPCG(5, 9))
	data = make([]byte, 0, rows*12)
	for i := 0; i < rows; i++ {
		data = strconv.AppendInt(data, r.Int64N(int64(keys)), 10)
		data = append(data, '\t')
		data = strconv.AppendInt(data, r.Int64N(1_000_000), 10)
		data = append(data, '\n')
	}
	return data, chunked(data)
}

// chunked cuts data into copyBenchChunk pieces that split lines anywhere,
// as the wire delivers them.
func chunked(data []byte) (chunks [][]byte) {
	for rest := data; len(rest) > 0; {
		n := min(copyBenchChunk, len(rest))
		chunks = append(chunks, rest[:n])
		rest = rest[n:]
	}
	return chunks
}

var benchTable = &storage.TableDef{ID: 1, Name: "t", Kind: storage.KindStream, Partitions: 1,
	Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "v", Type: types.TInt64}}}

// benchTextTable has a TEXT column, whose values the fast path checks
// for valid UTF-8.
var benchTextTable = &storage.TableDef{ID: 1, Name: "t", Kind: storage.KindStream, Partitions: 1,
	Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "v", Type: types.TText}}}

// copyWords is copyText with the second column a word of 4-12 letters:
// ASCII, or, if accented, one in three letters é.
func copyWords(rows int, accented bool) (data []byte, chunks [][]byte) {
	r := rand.New(rand.NewPCG(5, 9))
	for i := 0; i < rows; i++ {
		data = strconv.AppendInt(data, r.Int64N(1000), 10)
		data = append(data, '\t')
		for n := 4 + r.IntN(9); n > 0; n-- {
			if accented && n%3 == 0 {
				data = append(data, "é"...)
			} else {
				data = append(data, byte('a'+r.IntN(26)))
			}
		}
		data = append(data, '\n')
	}
	return data, chunked(data)
}

// BenchmarkCopyParse is copyIn's parsing into Arrow batches, without the
// log append: two BIGINT columns in text and CSV format, and a BIGINT and
// a TEXT column of ASCII or accented words in text format.
func BenchmarkCopyParse(b *testing.B) {
	for _, format := range []string{"text", "csv", "text-words", "text-accented"} {
		b.Run(format, func(b *testing.B) {
			opts, err := copyOptions(map[string]string{"format": strings.TrimSuffix(strings.TrimSuffix(format, "-words"), "-accented")})
			if err != nil {
				b.Fatal(err)
			}
			data, chunks := copyText(copyBenchRows, 1000)
			table := benchTable
			if format != "text" && format != "csv" {
				data, chunks = copyWords(copyBenchRows, format == "text-accented")
				table = benchTextTable
			}
			if format == "csv" {
				for i, ch := range data {
					if ch == '\t' {
						data[i] = ','
					}
				}
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				c := newCopyIn(nil, table, []int{0, 1}, opts)
				c.stageAt = math.MaxInt // parsing only: keep every batch
				for _, ch := range chunks {
					if err := c.Write(ch); err != nil {
						b.Fatal(err)
					}
				}
				c.flushBatch()
				if c.total != copyBenchRows {
					b.Fatalf("parsed %d rows, want %d", c.total, copyBenchRows)
				}
				c.release()
			}
			b.ReportMetric(float64(copyBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// openBenchEngine opens an engine on a temporary directory; par is the
// number of aggregate instances per job (0: the core count).
func openBenchEngine(b *testing.B, par int) (*Engine, *Session) {
	e, err := Open(Config{DataDir: b.TempDir(), Parallelism: par, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e, e.NewSession("streamdb", "streamdb")
}

func benchExec(b *testing.B, s *Session, query string) *Result {
	ctx := context.Background()
	sts, err := s.PrepareAll(ctx, query)
	if err != nil {
		b.Fatal(err)
	}
	var res *Result
	for _, st := range sts {
		if res, err = s.Execute(ctx, st, nil); err != nil {
			b.Fatalf("%s: %v", query, err)
		}
	}
	return res
}

func benchCopy(b *testing.B, s *Session, table string, chunks [][]byte) {
	res := benchExec(b, s, "COPY "+table+" FROM STDIN")
	for _, ch := range chunks {
		if err := res.CopyIn.Write(ch); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := res.CopyIn.Done(); err != nil {
		b.Fatal(err)
	}
}

// benchQuery runs a query and returns its row count.
func benchQuery(b *testing.B, s *Session, query string) int64 {
	res := benchExec(b, s, query)
	defer res.Rows.Close()
	var n int64
	for {
		rec, err := res.Rows.Next(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if rec == nil {
			return n
		}
		n += rec.NumRows()
		rec.Release()
	}
}

// BenchmarkEngineCopy is COPY of 2M (BIGINT, BIGINT) rows, synced, through the
// session API: parsing, Arrow batches, log append.
func BenchmarkEngineCopy(b *testing.B) {
	_, s := openBenchEngine(b, 0)
	benchExec(b, s, "CREATE TABLE t (k BIGINT, v BIGINT)")
	_, chunks := copyText(copyBenchRows, 1000)
	for b.Loop() {
		benchCopy(b, s, "t", chunks)
	}
	b.ReportMetric(float64(copyBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkEngineGroupBy is the batch query over 2M rows already in the log.
func BenchmarkEngineGroupBy(b *testing.B) {
	for _, keys := range []int{1000, 1 << 20} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			_, s := openBenchEngine(b, 0)
			benchExec(b, s, "CREATE TABLE t (k BIGINT, v BIGINT)")
			_, chunks := copyText(copyBenchRows, keys)
			benchCopy(b, s, "t", chunks)
			for b.Loop() {
				if n := benchQuery(b, s, "SELECT k, count(*), sum(v) FROM t GROUP BY k"); n == 0 {
					b.Fatal("no groups")
				}
			}
			b.ReportMetric(float64(copyBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkEngineCopyThenGroupBy is issue 3's end-to-end reference: COPY 2M
// rows into a fresh stream, then GROUP BY them (PostgreSQL: ~0.75 s).
func BenchmarkEngineCopyThenGroupBy(b *testing.B) {
	_, s := openBenchEngine(b, 0)
	_, chunks := copyText(copyBenchRows, 1000)
	i := 0
	for b.Loop() {
		i++
		t := fmt.Sprintf("t%d", i)
		benchExec(b, s, "CREATE TABLE "+t+" (k BIGINT, v BIGINT)")
		benchCopy(b, s, t, chunks)
		if n := benchQuery(b, s, "SELECT k, count(*), sum(v) FROM "+t+" GROUP BY k"); n != 1000 {
			b.Fatalf("%d groups, want 1000", n)
		}
	}
	b.ReportMetric(float64(copyBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkEngineView is issue 3's view benchmark in process: COPY rows into
// a stream feeding SELECT k, count(*), sum(v) GROUP BY k, then CHECKPOINT
// until the view has counted every row, with 1 aggregate instance and with
// one per core.
func BenchmarkEngineView(b *testing.B) {
	for _, c := range []struct{ keys, par int }{{1000, 1}, {1000, 0}, {1 << 20, 1}, {1 << 20, 0}} {
		keys := c.keys
		b.Run(fmt.Sprintf("keys=%d/instances=%d", keys, cmp.Or(c.par, runtime.NumCPU())), func(b *testing.B) {
			_, s := openBenchEngine(b, c.par)
			_, chunks := copyText(copyBenchRows, keys)
			i := 0
			var copyTime, after time.Duration // the COPY, and from its end until the view is complete
			for b.Loop() {
				i++
				src, view := fmt.Sprintf("s%d", i), fmt.Sprintf("v%d", i)
				b.StopTimer()
				benchExec(b, s, "CREATE TABLE "+src+" (k BIGINT, v BIGINT)")
				benchExec(b, s, "CREATE MATERIALIZED VIEW "+view+" AS SELECT k, count(*) AS c, sum(v) AS s FROM "+src+" GROUP BY k")
				b.StartTimer()
				start := time.Now()
				benchCopy(b, s, src, chunks)
				copied := time.Now()
				for benchCount(b, s, view) != copyBenchRows {
				}
				copyTime += copied.Sub(start)
				after += time.Since(copied)
				b.StopTimer()
				benchExec(b, s, "DROP MATERIALIZED VIEW "+view)
				benchExec(b, s, "DROP TABLE "+src)
				b.StartTimer()
			}
			b.ReportMetric(float64(copyBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(copyTime.Milliseconds())/float64(b.N), "copy-ms/op")
			b.ReportMetric(float64(after.Milliseconds())/float64(b.N), "after-copy-ms/op")
		})
	}
}

// benchCount takes a checkpoint and returns the rows the view has counted.
func benchCount(b *testing.B, s *Session, view string) int64 {
	benchExec(b, s, "CHECKPOINT")
	res := benchExec(b, s, "SELECT coalesce(sum(c), 0)::BIGINT FROM "+view)
	defer res.Rows.Close()
	rec, err := res.Rows.Next(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	return types.DatumAt(rec.Column(0), 0, types.TInt64).I
}
