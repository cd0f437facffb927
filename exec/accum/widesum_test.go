package accum

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// TestWideNumericSum: a numeric sum past the 128 bits of a Decimal128
// stays exact (its average is right, its sum is 22003, not wrapped),
// survives Encode/Decode, comes back within 128 bits under retraction, and
// avg state written before the wide form (its sum at the quotient's 20
// places) decodes at the argument's scale.
func TestWideNumericSum(t *testing.T) {
	in := types.T{Kind: types.Numeric, Scale: 16}
	out := types.T{Kind: types.Numeric, Scale: 20}
	mem := memory.NewGoAllocator()
	v, _ := types.NumericFromString("9000000000000000000000", 16) // 9e37 held: two pass 2^127
	b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 38, Scale: 16})
	b.AppendValues([]decimal128.Num{v, v, v}, nil)
	arg := b.NewArray()
	defer arg.Release()
	for _, avg := range []bool{false, true} {
		kind, ot := Sum, in
		if avg {
			kind, ot = Avg, out
		}
		spec := Spec{Kind: kind, Arg: &expr.ColRef{Idx: 0, T: in}, T: ot}
		acc := New(spec, true)
		acc.Grow(1)
		if err := acc.Update([]int32{0, 0, 0}, arg, nil); err != nil {
			t.Fatal(err)
		}
		// Through Encode/Decode into a fresh accumulator.
		fresh := New(spec, true)
		fresh.Grow(1)
		if rest, err := fresh.Decode(acc.Encode(nil, 0), 0); err != nil || len(rest) != 0 {
			t.Fatalf("decode: %v (%d bytes left)", err, len(rest))
		}
		c := fresh.(interface{ CheckResult(int32) error })
		if avg {
			// 9e21 needs 22 integer digits: not at 20 places, 22003.
			if err := c.CheckResult(0); err == nil {
				t.Fatalf("avg of 9e21 at 20 places: no error")
			}
			continue
		}
		if err := c.CheckResult(0); err == nil {
			t.Fatalf("sum past 2^127: no error, got %v", fresh.Result(0))
		}
		if err := fresh.Update([]int32{0, 0}, arg, []int8{-1, -1}); err != nil {
			t.Fatal(err)
		}
		if err := c.CheckResult(0); err != nil {
			t.Fatalf("sum back within range: %v", err)
		}
		if got := fresh.Result(0).D; got != v {
			t.Fatalf("sum after retraction = %v, want %v", got, v)
		}
	}

	// avg state of the older form: the sum at 20 places, no mark.
	spec := Spec{Kind: Avg, Arg: &expr.ColRef{Idx: 0, T: in}, T: out}
	acc := New(spec, false).(*sumDecAcc)
	acc.Grow(1)
	acc.n[0] = 2
	old := acc.Encode(nil, 0)[33:] // drop the mark, the high word and the sum: an older sum 30000 at 20 places
	old = append(make([]byte, 0, 16+len(old)), append(be128(decimal128.FromI64(30000)), old...)...)
	if _, err := acc.Decode(old, 0); err != nil {
		t.Fatal(err)
	}
	if acc.s[0] != decimal128.FromI64(3) {
		t.Fatalf("old avg state: sum %v, want 3 at 16 places", acc.s[0])
	}
}

func be128(n decimal128.Num) []byte {
	b := make([]byte, 16)
	hi, lo := uint64(n.HighBits()), n.LowBits()
	for i := 0; i < 8; i++ {
		b[i], b[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
	}
	return b
}
