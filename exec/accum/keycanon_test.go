package accum

import (
	"github.com/streamdb/streamdb/exec/opkit"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// TestCanonKey: equal interval and float keys become one value (so one
// hash, one encoding, one group); NULLs stay NULL; a job of a view keyed
// the old way (RawKeys) keeps the values as they are.
func TestCanonKey(t *testing.T) {
	build := func() []arrow.Array {
		ib := array.NewMonthDayNanoIntervalBuilder(opkit.Mem)
		defer ib.Release()
		ib.Append(arrow.MonthDayNanoInterval{Nanoseconds: 86400e9})
		ib.Append(arrow.MonthDayNanoInterval{Days: 1})
		ib.AppendNull()
		fb := array.NewFloat64Builder(opkit.Mem)
		defer fb.Release()
		fb.Append(math.Copysign(0, -1))
		fb.Append(0)
		fb.Append(math.Float64frombits(0xfff8000000000000)) // a NaN other than math.NaN()
		fb.Append(math.NaN())
		fb.AppendNull()
		return []arrow.Array{ib.NewArray(), fb.NewArray()}
	}
	for _, raw := range []bool{false, true} {
		keys := build()
		CanonKeys(&expr.Ctx{RawKeys: raw}, keys)
		h := HashColumns(nil, keys[:1], 3)
		if (h[0] == h[1]) == raw {
			t.Errorf("raw %v: hashes of 24:00:00 and 1 day equal: %v", raw, h[0] == h[1])
		}
		if !keys[0].IsNull(2) || !keys[1].IsNull(4) {
			t.Errorf("raw %v: a NULL key is no longer NULL", raw)
		}
		var enc opkit.RowEncoder
		enc.Encode(keys[1:], []types.T{types.TFloat64}, 4)
		if nan := string(enc.Row(2)) == string(enc.Row(3)); nan == raw {
			t.Errorf("raw %v: the two NaNs encode alike: %v", raw, nan)
		}
		if string(enc.Row(0)) != string(enc.Row(1)) {
			t.Errorf("raw %v: -0 and 0 encode differently", raw)
		}
		for _, k := range keys {
			k.Release()
		}
	}
}
