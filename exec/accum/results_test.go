package accum

import (
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// TestAppendResultsChecksRange: a bigint sum past the bigint range is an
// error (22003) when its result is read, not a wrapped value: the check an
// accumulator offers (CheckResult) is found through the Accum it is behind.
func TestAppendResultsChecksRange(t *testing.T) {
	b := array.NewInt64Builder(memory.NewGoAllocator())
	b.AppendValues([]int64{math.MaxInt64, 1, 5}, nil)
	arg := b.NewArray()
	defer arg.Release()
	spec := Spec{Kind: Sum, Arg: &expr.ColRef{Idx: 0, T: types.TInt64}, T: types.TInt64}
	acc := New(spec, false)
	acc.Grow(2)
	if err := acc.Update([]int32{0, 0, 1}, arg, nil); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	cols, err := AppendResults(mem, []Spec{spec}, []Accum{acc}, []int32{1}, nil)
	if err != nil {
		t.Fatalf("in range: %v", err)
	}
	if got := cols[0].(*array.Int64).Value(0); got != 5 {
		t.Fatalf("sum = %d, want 5", got)
	}
	cols[0].Release()
	_, err = AppendResults(mem, []Spec{spec}, []Accum{acc}, []int32{0}, nil)
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Code != sqlerr.NumericOutOfRange {
		t.Fatalf("out of range: got %v, want 22003", err)
	}
}

// TestSumDScaleUnderRetraction: sum over unconstrained NUMERIC
// show the largest display scale of the values still in the group, as
// PostgreSQL's maxScale over the remaining rows, also after the state is
// encoded and decoded; state written before the counts (one byte, the
// largest scale seen) still reads.
func TestSumDScaleUnderRetraction(t *testing.T) {
	arg := numericArray(t, "1.50", "2.125", "3.0")
	defer arg.Release()
	for _, kind := range []Kind{Sum} {
		spec := Spec{Kind: kind, Arg: &expr.ColRef{Idx: 0, T: types.TNumeric}, T: types.TNumeric}
		acc := New(spec, true)
		acc.Grow(2)
		if err := acc.Update([]int32{0, 0, 0}, arg, nil); err != nil {
			t.Fatal(err)
		}
		scale := func(g int32) int32 { return types.DScaleOf(acc.Result(g), types.TNumeric) }
		if got := scale(0); got != 3 {
			t.Fatalf("%v: scale %d, want 3", kind, got)
		}
		// Retract 2.125: 1.50 and 3.0 are left.
		if err := acc.Update([]int32{0, 0, 0}, arg, []int8{0, -1, 0}); err != nil {
			t.Fatal(err)
		}
		want := int32(2)
		if got := scale(0); got != want {
			t.Fatalf("%v after a retraction: scale %d, want %d", kind, got, want)
		}
		// Through state.
		acc.Decode(acc.Encode(nil, 0), 1)
		if got := scale(1); got != want {
			t.Fatalf("%v decoded: scale %d, want %d", kind, got, want)
		}
		// State of one byte (before the counts): that scale.
		st := acc.Encode(nil, 0)
		old := append(st[:17:17], 3) // the sum, the count (2: one byte), the scale
		if rest, err := acc.Decode(old, 1); err != nil || len(rest) != 0 {
			t.Fatalf("old state: %v, %d bytes left", err, len(rest))
		}
		if got := types.DScaleOf(acc.Result(1), types.TNumeric); got != 3 {
			t.Fatalf("old state: scale %d, want 3", got)
		}
	}
}

// TestSumDScaleManyScales: a group whose values have more distinct display
// scales than the flat slots (a sum of products over a join) still gives
// the largest scale of the values left after retractions, also through
// state.
func TestSumDScaleManyScales(t *testing.T) {
	arg := numericArray(t, "1", "1.5", "1.25", "1.125", "1.0625", "1.03125", "1.015625")
	defer arg.Release()
	spec := Spec{Kind: Sum, Arg: &expr.ColRef{Idx: 0, T: types.TNumeric}, T: types.TNumeric}
	acc := New(spec, true)
	acc.Grow(2)
	gids := []int32{0, 0, 0, 0, 0, 0, 0}
	if err := acc.Update(gids, arg, nil); err != nil {
		t.Fatal(err)
	}
	scale := func(g int32) int32 { return types.DScaleOf(acc.Result(g), types.TNumeric) }
	if got := scale(0); got != 6 {
		t.Fatalf("seven scales: %d, want 6", got)
	}
	// Retract the three of the largest scales: 4 is the largest left.
	if err := acc.Update(gids, arg, []int8{0, 0, 0, 0, -1, -1, -1}); err != nil {
		t.Fatal(err)
	}
	if got := scale(0); got != 3 {
		t.Fatalf("after retracting scales 4 to 6: %d, want 3", got)
	}
	if _, err := acc.Decode(acc.Encode(nil, 0), 1); err != nil {
		t.Fatal(err)
	}
	if got := scale(1); got != 3 {
		t.Fatalf("decoded: %d, want 3", got)
	}
	// Back in, through the decoded group: 6 again, and out: 3.
	if err := acc.Update([]int32{1, 1, 1, 1, 1, 1, 1}, arg, []int8{0, 0, 0, 0, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	if got := scale(1); got != 6 {
		t.Fatalf("decoded, the three back: %d, want 6", got)
	}
	if _, err := acc.Decode(acc.Encode(nil, 1), 0); err != nil {
		t.Fatal(err)
	}
	if err := acc.Update(gids, arg, []int8{0, 0, 0, 0, -1, -1, -1}); err != nil {
		t.Fatal(err)
	}
	if got := scale(0); got != 3 {
		t.Fatalf("decoded with seven scales, three retracted: %d, want 3", got)
	}
}

// TestSumDScaleMerge: merging two groups' sums (session windows) keeps the
// larger display scale of their values.
func TestSumDScaleMerge(t *testing.T) {
	arg := numericArray(t, "1.5", "2.125")
	defer arg.Release()
	spec := Spec{Kind: Sum, Arg: &expr.ColRef{Idx: 0, T: types.TNumeric}, T: types.TNumeric}
	acc := New(spec, false)
	acc.Grow(2)
	if err := acc.Update([]int32{0, 1}, arg, nil); err != nil {
		t.Fatal(err)
	}
	Merge(acc, 0, 1)
	if got := types.DScaleOf(acc.Result(0), types.TNumeric); got != 3 {
		t.Fatalf("merged sum's scale %d, want 3", got)
	}
}

// numericArray is an unconstrained NUMERIC column of vals, each carrying
// the display scale written.
func numericArray(t *testing.T, vals ...string) arrow.Array {
	b := types.NewBuilder(memory.NewGoAllocator(), types.TNumeric).(*types.DecimalBuilder)
	defer b.Release()
	for _, s := range vals {
		d, err := types.ParseText(s, types.TNumeric)
		if err != nil {
			t.Fatal(err)
		}
		b.AppendDS(d.D, d.DS)
	}
	return b.NewArray()
}
