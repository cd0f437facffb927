package expr

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/types"
)

const benchRows = 64 << 10

// benchBatch has columns x, y (BIGINT, 1% NULL in x) and s (TEXT).
func benchBatch(mem memory.Allocator) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(1, 2))
	xb := array.NewInt64Builder(mem)
	yb := array.NewInt64Builder(mem)
	sb := array.NewStringBuilder(mem)
	defer xb.Release()
	defer yb.Release()
	defer sb.Release()
	for i := 0; i < benchRows; i++ {
		if r.IntN(100) == 0 {
			xb.AppendNull()
		} else {
			xb.Append(r.Int64N(1000))
		}
		yb.Append(r.Int64N(1000))
		sb.Append("user-" + strconv.Itoa(r.IntN(10000)))
	}
	cols := []arrow.Array{xb.NewArray(), yb.NewArray(), sb.NewArray()}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBatch(schema, cols, benchRows)
	for _, c := range cols {
		c.Release()
	}
	return b
}

var (
	bx = &ColRef{Idx: 0, T: types.TInt64, Name: "x"}
	by = &ColRef{Idx: 1, T: types.TInt64, Name: "y"}
	bs = &ColRef{Idx: 2, T: types.TText, Name: "s"}
)

func benchEval(b *testing.B, e Expr) {
	mem := memory.NewGoAllocator()
	benchEvalOn(b, e, mem, benchBatch(mem))
}

// benchEvalOn evaluates e over in (released at the end) in a loop.
func benchEvalOn(b *testing.B, e Expr, mem memory.Allocator, in arrow.RecordBatch) {
	defer in.Release()
	ctx := &Ctx{Mem: mem}
	b.ResetTimer()
	for b.Loop() {
		out, err := Eval(ctx, e, in)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
}

func benchFilter(b *testing.B, pred Expr) {
	mem := memory.NewGoAllocator()
	in := benchBatch(mem)
	defer in.Release()
	ctx := &Ctx{Mem: mem}
	b.ResetTimer()
	for b.Loop() {
		out, err := Filter(ctx, pred, in)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkFilterInt64GtConst is WHERE x > 500 over x, y, s: about half the
// rows pass, so it measures the compare kernel and the typed take.
func BenchmarkFilterInt64GtConst(b *testing.B) {
	benchFilter(b, fn(">", types.TBool, bx, ci(500)))
}

func BenchmarkAddInt64(b *testing.B) {
	benchEval(b, fn("+", types.TInt64, bx, by))
}

func BenchmarkAddInt64Const(b *testing.B) {
	benchEval(b, fn("+", types.TInt64, bx, ci(1)))
}

func BenchmarkAndCompare(b *testing.B) {
	benchEval(b, fn("and", types.TBool, fn(">", types.TBool, bx, ci(100)), fn("<=", types.TBool, by, ci(900))))
}

func BenchmarkLikePrefix(b *testing.B) {
	benchEval(b, fn("like", types.TBool, bs, cs("user-1%")))
}

func BenchmarkCaseLazyDiv(b *testing.B) {
	benchEval(b, &Case{T: types.TInt64, Whens: []When{{fn("<>", types.TBool, by, ci(0)), fn("/", types.TInt64, bx, by)}}})
}
