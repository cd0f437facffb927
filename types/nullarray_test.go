package types

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestNullArrayShared checks the all-NULL columns NullArray makes
// from the shared zeros against the builder's: same type, length, NULLs,
// values and slices, at sizes around a byte of bitmap and around the
// shared buffer's end (past it the builder makes them), and that the
// checked allocator sees every byte it handed out freed.
func TestNullArrayShared(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, ty := range []T{TInt64, TFloat64, TTimestamp, TText, TBool} {
		for _, n := range []int{1, 7, 8, 9, 4096, 64 << 10, 64<<10 + 1} {
			got := NullArray(mem, ty, n)
			bl := NewBuilder(mem, ty)
			bl.AppendNulls(n)
			want := bl.NewArray()
			bl.Release()
			if !array.Equal(got, want) || got.NullN() != n || got.Len() != n || !arrow.TypeEqual(got.DataType(), want.DataType()) {
				t.Errorf("%s x %d: got %v (%d NULLs), want %v", ty, n, got.DataType(), got.NullN(), want.DataType())
			}
			if n > 8 {
				gs, ws := array.NewSlice(got, 3, int64(n-1)), array.NewSlice(want, 3, int64(n-1))
				if !array.Equal(gs, ws) || gs.NullN() != ws.NullN() {
					t.Errorf("%s x %d: slices differ", ty, n)
				}
				gs.Release()
				ws.Release()
			}
			got.Release()
			want.Release()
		}
	}
	for _, b := range nullZeros {
		if b != 0 {
			t.Fatal("the shared zeros were written")
		}
	}
}
