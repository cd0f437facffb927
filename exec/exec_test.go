package exec

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/streamdb/streamdb/exec/agg"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/batch/batchtest"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// withChecked makes operators allocate from a checked allocator and fails
// the test if anything is left allocated at the end.
func withChecked(t *testing.T) {
	mem := batchtest.WithChecked(t)
	old := memoryPool
	memoryPool = mem
	t.Cleanup(func() { memoryPool = old })
}

func col(i int, t types.T) *expr.ColRef { return batchtest.Col(i, t) }

func lit(v int64) expr.Expr { return batchtest.Lit(v) }

func null(t types.T) expr.Expr { return batchtest.Null(t) }

func str(s string) expr.Expr { return batchtest.Str(s) }

// kv builds a Values plan of (text, bigint) rows.
func kv(rows ...[2]expr.Expr) *plan.Values { return batchtest.KV(rows...) }

// runText runs p and returns its rows as text lines, sorted unless ordered.
func runText(t *testing.T, p plan.Plan, ordered bool) string {
	t.Helper()
	return batchtest.RunText(t, memoryPool, p, ordered)
}

func wantCode(t *testing.T, err error, code string) *sqlerr.Error {
	t.Helper()
	return batchtest.WantCode(t, err, code)
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
