package storage

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Log benchmarks over batches of (k BIGINT, v BIGINT), 64K rows each (the
// COPY batch size). Appends are synced, as COPY's are.
//
//	go test ./storage/ -run '^$' -bench . -benchtime 2s

const benchBatchRows = 64 << 10

func benchKV(mem memory.Allocator, n int, seed uint64) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, 3))
	kb, vb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	defer kb.Release()
	defer vb.Release()
	kb.Reserve(n)
	vb.Reserve(n)
	for i := 0; i < n; i++ {
		kb.UnsafeAppend(r.Int64N(1000))
		vb.UnsafeAppend(r.Int64N(1 << 40))
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	cols := []arrow.Array{kb.NewArray(), vb.NewArray()}
	defer cols[0].Release()
	defer cols[1].Release()
	return array.NewRecordBatch(schema, cols, int64(n))
}

func openBench(b *testing.B) *DB {
	db, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func rowsPerSec(b *testing.B, rows int) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkEncodeBlock(b *testing.B) {
	rec := benchKV(memory.NewGoAllocator(), benchBatchRows, 1)
	defer rec.Release()
	b.SetBytes(16 * benchBatchRows)
	for b.Loop() {
		if _, err := EncodeBlock(rec); err != nil {
			b.Fatal(err)
		}
	}
	rowsPerSec(b, benchBatchRows)
}

func BenchmarkDecodeBlock(b *testing.B) {
	mem := memory.NewGoAllocator()
	rec := benchKV(mem, benchBatchRows, 1)
	defer rec.Release()
	v, err := EncodeBlock(rec)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(16 * benchBatchRows)
	for b.Loop() {
		out, err := DecodeBlock(mem, v)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	rowsPerSec(b, benchBatchRows)
}

// BenchmarkAppendLog appends `batches` 64K-row batches per synced call: 1 is
// an INSERT-sized write, 32 (2M rows) is one COPY of the benchmark.
func BenchmarkAppendLog(b *testing.B) {
	for _, batches := range []int{1, 32} {
		b.Run(fmt.Sprintf("batches=%d", batches), func(b *testing.B) {
			db := openBench(b)
			mem := memory.NewGoAllocator()
			recs := make([]arrow.RecordBatch, batches)
			for i := range recs {
				recs[i] = benchKV(mem, benchBatchRows, uint64(i))
				defer recs[i].Release()
			}
			b.SetBytes(int64(16 * benchBatchRows * batches))
			for b.Loop() {
				if _, err := db.Log().Append(1, 0, recs); err != nil {
					b.Fatal(err)
				}
			}
			rowsPerSec(b, benchBatchRows*batches)
		})
	}
}

// BenchmarkAppendLogParallel has concurrent writers of one 64K-row batch each
// on distinct partitions, sharing fsyncs (group commit).
func BenchmarkAppendLogParallel(b *testing.B) {
	db := openBench(b)
	rec := benchKV(memory.NewGoAllocator(), benchBatchRows, 1)
	defer rec.Release()
	var part atomic.Uint32
	b.SetParallelism(4)
	b.SetBytes(16 * benchBatchRows)
	b.RunParallel(func(pb *testing.PB) {
		p := part.Add(1)
		for pb.Next() {
			if _, err := db.Log().Append(2, p, []arrow.RecordBatch{rec}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	rowsPerSec(b, benchBatchRows)
}

// BenchmarkReadLog reads back 2M rows (32 blocks) written once.
func BenchmarkReadLog(b *testing.B) {
	const batches = 32
	db := openBench(b)
	mem := memory.NewGoAllocator()
	recs := make([]arrow.RecordBatch, batches)
	for i := range recs {
		recs[i] = benchKV(mem, benchBatchRows, uint64(i))
		defer recs[i].Release()
	}
	if _, err := db.Log().Append(1, 0, recs); err != nil {
		b.Fatal(err)
	}
	_, end, _, err := db.Log().Bounds(1, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(16 * benchBatchRows * batches)
	for b.Loop() {
		var n int64
		err := db.Log().Read(mem, 1, 0, 0, end, func(_ uint64, rec arrow.RecordBatch) error {
			n += rec.NumRows()
			rec.Release()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if n != benchBatchRows*batches {
			b.Fatalf("read %d rows, want %d", n, benchBatchRows*batches)
		}
	}
	rowsPerSec(b, benchBatchRows*batches)
}
