package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// The encodings and record helpers live in exec/opkit, shared with the
// operator families; these forward to them under the names exec has
// always used (the ones that allocate do so from memoryPool).

// memoryPool is the allocator of operator-internal arrays.
var memoryPool memory.Allocator = opkit.Mem

var errCorruptState = opkit.ErrCorruptState

func encodeDatum(buf []byte, d types.Datum, t types.T) []byte { return opkit.EncodeDatum(buf, d, t) }

func decodeDatum(buf []byte, t types.T) (types.Datum, []byte, error) {
	return opkit.DecodeDatum(buf, t)
}

func readUvarint(buf []byte) (uint64, []byte, error) { return opkit.ReadUvarint(buf) }

func compareDatum(a, b types.Datum, t types.T) int { return opkit.CompareDatum(a, b, t) }

// takeSplit is takeRecord for a batch split between an aggregate's
// instances: its BIGINT columns without NULLs come from splitPool.
func takeSplit(rec arrow.RecordBatch, idx []int, ts []types.T) arrow.RecordBatch {
	cols := make([]arrow.Array, len(ts))
	for c := range ts {
		cols[c] = opkit.TakeArrayInts(memoryPool, splitPool, rec.Column(c), idx, ts[c])
	}
	return newRecord(ts, cols, len(idx))
}

// takeRecord returns the rows idx of rec as a new record of types ts.
func takeRecord(rec arrow.RecordBatch, idx []int, ts []types.T) arrow.RecordBatch {
	return opkit.TakeRecordMem(memoryPool, rec, idx, ts)
}

// newRecord makes a record of the given columns, taking ownership of them.
func newRecord(ts []types.T, cols []arrow.Array, n int) arrow.RecordBatch {
	return opkit.NewRecord(ts, cols, n)
}

// Allocator is the allocator batches in exec are made with.
func Allocator() memory.Allocator { return memoryPool }

func releaseAll(as []arrow.Array) { opkit.ReleaseAll(as) }
