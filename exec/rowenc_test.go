package exec

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/types"
)

// TestRowEncoder checks the column-at-a-time encoder and the typed decoder
// against encodeRow and decodeDatum, with NULLs in every column.
func TestRowEncoder(t *testing.T) {
	ts := []types.T{types.TInt64, types.TFloat64, types.TText, types.NumericOf(20, 2), types.TBool, types.TInterval}
	r := rand.New(rand.NewPCG(1, 2))
	bls := make([]arrowBuilder, len(ts))
	for c, ty := range ts {
		bls[c] = types.NewBuilder(memoryPool, ty)
	}
	const n = 500
	for i := 0; i < n; i++ {
		for c, ty := range ts {
			if r.IntN(5) == 0 {
				bls[c].AppendNull()
				continue
			}
			var d types.Datum
			switch ty.Physical() {
			case types.PhysInt64:
				d = types.Int(r.Int64() - r.Int64())
			case types.PhysFloat64:
				d = types.Float(r.NormFloat64())
				if i%7 == 0 {
					d = types.Float(0) // and -0 below
					d.F = -d.F
				}
			case types.PhysString:
				d = types.Str(string(make([]byte, r.IntN(300))))
			case types.PhysBool:
				d = types.Boolean(r.IntN(2) == 0)
			default:
				d, _, _ = decodeDatum(append([]byte{1}, make([]byte, 16)...), ty)
			}
			types.AppendDatum(bls[c], d, ty)
		}
	}
	cols := make([]arrow.Array, len(ts))
	for c, b := range bls {
		cols[c] = b.NewArray()
		b.Release()
	}
	rec := newRecord(ts, cols, n)
	defer rec.Release()
	var e rowEncoder
	e.Encode(rec.Columns(), ts, n)
	encs := make([]string, n)
	for i := 0; i < n; i++ {
		want := encodeRow(nil, rec, i, ts)
		if string(e.Row(i)) != string(want) || e.RowString(i) != string(want) {
			t.Fatalf("row %d: got %x, want %x", i, e.Row(i), want)
		}
		encs[i] = e.RowString(i)
	}
	back := decodeRecord(ts, encs)
	defer back.Release()
	for i := 0; i < n; i++ {
		if got, want := string(encodeRow(nil, back, i, ts)), encs[i]; got != want {
			t.Fatalf("decoded row %d: got %x, want %x", i, got, want)
		}
	}
}
