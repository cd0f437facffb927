package exec

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/agg"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/types"
)

// withChecked makes operators allocate from a checked allocator and fails
// the test if anything is left allocated at the end.
func withChecked(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	old, oldKit := memoryPool, opkit.Mem
	memoryPool, opkit.Mem = mem, mem
	t.Cleanup(func() {
		memoryPool, opkit.Mem = old, oldKit
		mem.AssertSize(t, 0)
	})
}

func col(i int, t types.T) *expr.ColRef { return &expr.ColRef{Idx: i, T: t} }

func lit(v int64) expr.Expr { return &expr.Const{D: types.Int(v), T: types.TInt64} }

func null(t types.T) expr.Expr { return &expr.Const{D: types.Null, T: t} }

func str(s string) expr.Expr { return &expr.Const{D: types.Str(s), T: types.TText} }

// values builds a Values plan of (text, bigint) rows.
func kv(rows ...[2]expr.Expr) *plan.Values {
	v := &plan.Values{Ts: []types.T{types.TText, types.TInt64}}
	for _, r := range rows {
		v.Rows = append(v.Rows, []expr.Expr{r[0], r[1]})
	}
	return v
}

// runText runs p and returns its rows as text lines, sorted unless ordered.
func runText(t *testing.T, p plan.Plan, ordered bool) string {
	t.Helper()
	ctx := &plan.Ctx{Context: context.Background(), Expr: &expr.Ctx{Mem: memoryPool}}
	var lines []string
	ts := p.Types()
	err := batch.Run(ctx, p, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		for i := 0; i < int(rec.NumRows()); i++ {
			var vals []string
			for c, ty := range ts {
				d := types.DatumAt(rec.Column(c), i, ty)
				if d.Null {
					vals = append(vals, "NULL")
				} else {
					vals = append(vals, types.TextOf(d, ty))
				}
			}
			lines = append(lines, strings.Join(vals, " "))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ordered {
		sort.Strings(lines)
	}
	return strings.Join(lines, "\n")
}

func TestHashAggBatch(t *testing.T) {
	withChecked(t)
	in := kv([2]expr.Expr{str("a"), lit(1)}, [2]expr.Expr{str("b"), lit(2)}, [2]expr.Expr{str("a"), lit(5)},
		[2]expr.Expr{str("a"), null(types.TInt64)}, [2]expr.Expr{null(types.TText), lit(7)}, [2]expr.Expr{str("b"), lit(2)})
	v := col(1, types.TInt64)
	p := &plan.HashAgg{In: in, Keys: []expr.Expr{col(0, types.TText)}, Aggs: []plan.AggSpec{
		{Kind: plan.AggCountStar, T: types.TInt64},
		{Kind: plan.AggCount, Arg: v, T: types.TInt64},
		{Kind: plan.AggSum, Arg: v, T: types.NumericOf(38, 0)},
		{Kind: plan.AggMin, Arg: v, T: types.TInt64},
		{Kind: plan.AggMax, Arg: v, T: types.TInt64},
		{Kind: plan.AggCount, Distinct: true, Arg: v, T: types.TInt64},
		{Kind: plan.AggAvg, Arg: v, T: types.NumericOf(38, 2)},
	}}
	want := "NULL 1 1 7 7 7 1 7.00\na 3 2 6 1 5 2 3.00\nb 2 2 4 2 2 1 2.00"
	if got := runText(t, p, false); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestGlobalAggOnEmptyInput(t *testing.T) {
	withChecked(t)
	p := &plan.HashAgg{In: kv(), Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64},
		{Kind: plan.AggSum, Arg: col(1, types.TInt64), T: types.NumericOf(38, 0)}}}
	if got := runText(t, p, false); got != "0 NULL" {
		t.Errorf("count(*), sum over no rows = %q, want 0 NULL", got)
	}
}

// TestAggRetractions feeds changes with signs, as a view over a view does,
// and checks every aggregate against recomputation from the surviving rows.
func TestAggRetractions(t *testing.T) {
	withChecked(t)
	v := col(1, types.TInt64)
	spec := &plan.HashAgg{Keys: []expr.Expr{col(0, types.TText)}, Aggs: []plan.AggSpec{
		{Kind: plan.AggCountStar, T: types.TInt64}, {Kind: plan.AggSum, Arg: v, T: types.NumericOf(38, 0)},
		{Kind: plan.AggMin, Arg: v, T: types.TInt64}, {Kind: plan.AggMax, Arg: v, T: types.TInt64},
		{Kind: plan.AggCount, Distinct: true, Arg: v, T: types.TInt64}}}
	out := &opkittest.Outlet{}
	op := agg.New(plan.AggSpecOf(spec, true, nil), agg.Node{Node: opkittest.Node(out, nil), KeepRows: true})
	ectx := &expr.Ctx{Mem: memoryPool}
	epoch := uint64(0)
	push := func(rows [][2]expr.Expr, ops []Op) {
		t.Helper()
		var recs []arrow.RecordBatch
		if err := batch.Run(&plan.Ctx{Context: context.Background(), Expr: ectx}, kv(rows...), func(r arrow.RecordBatch) error {
			recs = append(recs, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := op.Push(ectx, Chunk{Rec: r, Ops: ops}, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	var changes []string
	flush := func() string {
		t.Helper()
		changes = changes[:0]
		epoch++
		if err := op.Barrier(ectx, &Barrier{Epoch: epoch}, nil); err != nil {
			t.Fatal(err)
		}
		for _, c := range out.Chunks {
			for i := 0; i < int(c.Rec.NumRows()); i++ {
				var vals []string
				for ci, ty := range spec.Types() {
					d := types.DatumAt(c.Rec.Column(ci), i, ty)
					if d.Null {
						vals = append(vals, "NULL")
					} else {
						vals = append(vals, types.TextOf(d, ty))
					}
				}
				changes = append(changes, c.Ops[i].String()+" "+strings.Join(vals, " "))
			}
			c.Rec.Release()
		}
		out.Chunks = out.Chunks[:0]
		sort.Strings(changes)
		return strings.Join(changes, "\n")
	}
	push([][2]expr.Expr{{str("a"), lit(3)}, {str("a"), lit(9)}, {str("a"), lit(1)}, {str("b"), lit(4)}}, nil)
	if got, want := flush(), "insert a 3 13 1 9 3\ninsert b 1 4 4 4 1"; got != want {
		t.Fatalf("first epoch:\n%s\nwant\n%s", got, want)
	}
	// Retract a's min and max, and b's only row.
	push([][2]expr.Expr{{str("a"), lit(1)}, {str("a"), lit(9)}, {str("b"), lit(4)}}, []Op{OpDelete, OpUpdateBefore, OpDelete})
	if got, want := flush(), "delete b 1 4 4 4 1\nupdate_after a 1 3 3 3 1\nupdate_before a 3 13 1 9 3"; got != want {
		t.Fatalf("after retractions:\n%s\nwant\n%s", got, want)
	}
	// An epoch that changes nothing visible emits nothing.
	push([][2]expr.Expr{{str("a"), lit(5)}, {str("a"), lit(5)}}, []Op{OpInsert, OpDelete})
	if got := flush(); got != "" {
		t.Fatalf("net-zero epoch emitted %q", got)
	}
}

func TestHashJoin(t *testing.T) {
	withChecked(t)
	left := kv([2]expr.Expr{str("a"), lit(1)}, [2]expr.Expr{str("b"), lit(2)}, [2]expr.Expr{str("c"), null(types.TInt64)}, [2]expr.Expr{str("d"), lit(2)})
	right := kv([2]expr.Expr{str("x"), lit(2)}, [2]expr.Expr{str("y"), lit(2)}, [2]expr.Expr{str("z"), lit(3)}, [2]expr.Expr{str("n"), null(types.TInt64)})
	inner := &plan.HashJoin{Left: left, Right: right, Kind: plan.JoinInner,
		LeftKeys: []expr.Expr{col(1, types.TInt64)}, RightKeys: []expr.Expr{col(1, types.TInt64)}}
	if got, want := runText(t, inner, false), "b 2 x 2\nb 2 y 2\nd 2 x 2\nd 2 y 2"; got != want {
		t.Errorf("inner join:\n%s\nwant\n%s", got, want)
	}
	leftJ := *inner
	leftJ.Kind = plan.JoinLeft
	leftJ.Residual = &expr.Func{Name: "<>", Args: []expr.Expr{col(2, types.TText), str("y")}, T: types.TBool}
	if got, want := runText(t, &leftJ, false), "a 1 NULL NULL\nb 2 x 2\nc NULL NULL NULL\nd 2 x 2"; got != want {
		t.Errorf("left join with residual:\n%s\nwant\n%s", got, want)
	}
}

func TestSortLimit(t *testing.T) {
	withChecked(t)
	in := kv([2]expr.Expr{str("a"), lit(3)}, [2]expr.Expr{str("b"), null(types.TInt64)}, [2]expr.Expr{str("c"), lit(1)}, [2]expr.Expr{str("d"), lit(3)})
	asc := &plan.Sort{In: in, Keys: []plan.SortKey{{E: col(1, types.TInt64)}, {E: col(0, types.TText), Desc: true}}, Limit: -1}
	if got, want := runText(t, asc, true), "c 1\nd 3\na 3\nb NULL"; got != want {
		t.Errorf("ORDER BY v, k DESC:\n%s\nwant\n%s", got, want)
	}
	desc := &plan.Sort{In: in, Keys: []plan.SortKey{{E: col(1, types.TInt64), Desc: true, NullsFirst: true}}, Limit: -1}
	lim := &plan.Limit{In: desc, Offset: 1, Count: 2}
	if got, want := runText(t, lim, true), "a 3\nd 3"; got != want {
		t.Errorf("ORDER BY v DESC OFFSET 1 LIMIT 2:\n%s\nwant\n%s", got, want)
	}
}

// TestHashDatumsMatchesColumns: a group restored from state (boxed key
// values) must land where the same key from a batch does.
func TestHashDatumsMatchesColumns(t *testing.T) {
	withChecked(t)
	ts := []types.T{types.TInt64, types.TText, types.TFloat64, types.TBool, types.NumericOf(10, 2), types.TInterval}
	rows := [][]types.Datum{
		{types.Int(1), types.Str("a"), types.Float(0.5), types.Boolean(true), {}, {}},
		{types.Null, types.Str(""), types.Float(-0.0), types.Boolean(false), types.Null, types.Null},
		{types.Int(-7), types.Null, types.Null, types.Null, {}, {}},
	}
	rows[0][4].D = decimal128.FromI64(12345)
	rows[0][5].IV = arrow.MonthDayNanoInterval{Months: -1, Days: 2, Nanoseconds: 3}
	arrs := make([]arrow.Array, len(ts))
	for c, ty := range ts {
		b := types.NewBuilder(memoryPool, ty)
		for _, r := range rows {
			types.AppendDatum(b, r[c], ty)
		}
		arrs[c] = b.NewArray()
		b.Release()
	}
	defer releaseAll(arrs)
	h := hashColumns(nil, arrs, len(rows))
	for i, r := range rows {
		if got := hashDatums(r, ts); got != h[i] {
			t.Errorf("row %d: hashDatums %x, hashColumns %x", i, got, h[i])
		}
	}
	// And a table loaded from datums finds the same keys from arrays.
	g := newGroupTable(ts)
	for _, r := range rows {
		g.InsertDatums(r)
	}
	gids := make([]int32, len(rows))
	if created := g.Lookup(arrs, len(rows), gids, false); created != 0 {
		t.Fatalf("lookup created %d groups", created)
	}
	for i, gid := range gids {
		if gid != int32(i) {
			t.Errorf("row %d found group %d", i, gid)
		}
	}
}
