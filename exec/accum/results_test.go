package accum

import (
	"errors"
	"math"
	"testing"

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
