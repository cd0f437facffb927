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
		CanonKeysT(&expr.Ctx{RawKeys: raw}, keys, []types.T{types.TInterval, types.TFloat64})
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

// TestCanonKeyJSONB: jsonb values whose numbers differ only in trailing
// fractional zeros, at any depth, become one value; a jsonb column already
// in key form is returned as it is; RawJSONBKeys keeps the values.
func TestCanonKeyJSONB(t *testing.T) {
	enc := func(s string) string {
		d, err := types.EncodeJSONB(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	build := func(texts ...string) arrow.Array {
		b := array.NewStringBuilder(opkit.Mem)
		defer b.Release()
		for _, s := range texts {
			if s == "" {
				b.AppendNull()
				continue
			}
			b.Append(enc(s))
		}
		return b.NewArray()
	}
	same := []string{`{"a": 1}`, `{"a": 1.0}`, `{"a": 1.00}`, `{"a": 1e0}`, `{"a": 10e-1}`}
	nested := []string{`[{"b": [2.50, -0.0]}]`, `[{"b": [2.5, 0]}]`}
	for _, raw := range []bool{false, true} {
		keys := []arrow.Array{build(append(append(same, nested...), "")...)}
		CanonKeysT(&expr.Ctx{RawJSONBKeys: raw}, keys, []types.T{types.TJSONB})
		col := keys[0].(*array.String)
		for i := 1; i < len(same); i++ {
			if eq := col.Value(i) == col.Value(0); eq == raw && i != 3 {
				t.Errorf("raw %v: %s and %s key alike: %v", raw, same[0], same[i], eq)
			}
		}
		if !raw {
			if got := types.JSONBOut(col.Value(1)); got != `{"a": 1}` {
				t.Errorf("key form of {\"a\": 1.0} prints %s", got)
			}
			if col.Value(5) != col.Value(6) {
				t.Errorf("nested: %s and %s key differently", nested[0], nested[1])
			}
		}
		if !col.IsNull(7) {
			t.Errorf("raw %v: a NULL key is no longer NULL", raw)
		}
		keys[0].Release()
	}
	canon := build(`{"a": 1}`, `[1.5, "x"]`)
	keys := []arrow.Array{canon}
	canon.Retain()
	CanonKeysT(nil, keys, []types.T{types.TJSONB})
	if keys[0] != canon {
		t.Error("a jsonb column already in key form was copied")
	}
	keys[0].Release()
	canon.Release()
}
