package sql

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// Benchmarks of uuid columns end to end (issue 30): COPY of uuids and a
// GROUP BY uuid, to compare uuid's layouts (its canonical text in an
// Arrow String column, or 16 bytes).
//
//	go test ./sql/ -run '^$' -bench 'EngineUUID' -benchmem -benchtime 3x

const uuidBenchRows = 500_000

// copyUUIDs is rows of "u\tv\n": u one of keys uuids in canonical text, v
// in [0, 1e6), cut as the wire delivers them.
func copyUUIDs(rows, keys int) (chunks [][]byte) {
	r := rand.New(rand.NewPCG(5, 9))
	pool := make([]string, keys)
	for i := range pool {
		pool[i] = fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff,
			r.Uint32()&0xfff, 0x8000|r.Uint32()&0x3fff, r.Uint64()&0xffffffffffff)
	}
	data := make([]byte, 0, rows*44)
	for i := 0; i < rows; i++ {
		data = append(data, pool[r.IntN(keys)]...)
		data = append(data, '\t')
		data = strconv.AppendInt(data, r.Int64N(1_000_000), 10)
		data = append(data, '\n')
	}
	return chunked(data)
}

// BenchmarkEngineUUIDCopy is COPY of (UUID, BIGINT) rows, synced, through
// the session API: uuid_in, Arrow batches, log append.
func BenchmarkEngineUUIDCopy(b *testing.B) {
	_, s := openBenchEngine(b, 0)
	benchExec(b, s, "CREATE TABLE t (u UUID, v BIGINT)")
	chunks := copyUUIDs(uuidBenchRows, 1<<20)
	for b.Loop() {
		benchCopy(b, s, "t", chunks)
	}
	b.ReportMetric(float64(uuidBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkEngineUUIDGroupBy is the batch query SELECT u, count(*), sum(v)
// GROUP BY u over rows already in the log, with few and with many groups.
func BenchmarkEngineUUIDGroupBy(b *testing.B) {
	for _, keys := range []int{1000, 1 << 20} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			_, s := openBenchEngine(b, 0)
			benchExec(b, s, "CREATE TABLE t (u UUID, v BIGINT)")
			benchCopy(b, s, "t", copyUUIDs(uuidBenchRows, keys))
			for b.Loop() {
				if n := benchQuery(b, s, "SELECT u, count(*), sum(v) FROM t GROUP BY u"); n == 0 {
					b.Fatal("no groups")
				}
			}
			b.ReportMetric(float64(uuidBenchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
