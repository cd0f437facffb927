package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// Row encodings live in exec/opkit (rowenc.go there); these are exec's
// names for them.
type (
	rowEncoder = opkit.RowEncoder
	rowDecoder = opkit.RowDecoder
	rowsOut    = opkit.RowsOut
	// stateSnapshot is an operator instance's entries at a checkpoint.
	stateSnapshot = opkit.Snapshot
)

// bytesView is b as a string without a copy, for map lookups only.
func bytesView(b []byte) string { return opkit.BytesView(b) }

func encodeRow(buf []byte, rec arrow.RecordBatch, i int, ts []types.T) []byte {
	return opkit.EncodeRow(buf, rec, i, ts)
}

func decodeRecord(ts []types.T, encs []string) arrow.RecordBatch { return opkit.DecodeRecord(ts, encs) }
