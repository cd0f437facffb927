package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

const sec = int64(1_000_000)

func tsLit(us int64) expr.Expr { return &expr.Const{D: types.Int(us), T: types.TTimestamp} }

// hopInput is (text, timestamp) rows: 00:00:01, 00:00:05 (on a slide
// boundary), 23:59:58 the day before (negative), and NULL.
func hopInput() *plan.Values {
	v := &plan.Values{Ts: []types.T{types.TText, types.TTimestamp}}
	for _, r := range [][2]expr.Expr{{str("a"), tsLit(1 * sec)}, {str("b"), tsLit(5 * sec)}, {str("c"), tsLit(-2 * sec)}, {str("n"), null(types.TTimestamp)}} {
		v.Rows = append(v.Rows, []expr.Expr{r[0], r[1]})
	}
	return v
}

func TestHopExpand(t *testing.T) {
	withChecked(t)
	h := &plan.Hop{In: hopInput(), TS: col(1, types.TTimestamp), Slide: 5 * sec, Size: 10 * sec}
	// Each row in its two windows, the earliest first; NULL in one.
	want := "a 1970-01-01 00:00:01 1969-12-31 23:59:55 1970-01-01 00:00:05\n" +
		"a 1970-01-01 00:00:01 1970-01-01 00:00:00 1970-01-01 00:00:10\n" +
		"b 1970-01-01 00:00:05 1970-01-01 00:00:00 1970-01-01 00:00:10\n" +
		"b 1970-01-01 00:00:05 1970-01-01 00:00:05 1970-01-01 00:00:15\n" +
		"c 1969-12-31 23:59:58 1969-12-31 23:59:50 1970-01-01 00:00:00\n" +
		"c 1969-12-31 23:59:58 1969-12-31 23:59:55 1970-01-01 00:00:05\n" +
		"n NULL NULL NULL"
	if got := runText(t, h, true); got != want {
		t.Fatalf("hop:\n%s\nwant\n%s", got, want)
	}
}

// An edge's stages keep, for each window row, the input row it came from
// (the ops and row ids of a changelog follow it).
func TestHopStageTracksRows(t *testing.T) {
	withChecked(t)
	in := hopInput()
	var rec arrow.RecordBatch
	if err := batch.Run(&plan.Ctx{Context: context.Background(), Expr: &expr.Ctx{Mem: memoryPool}}, in, func(r arrow.RecordBatch) error {
		rec = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	h := &plan.Hop{In: in, TS: col(1, types.TTimestamp), Slide: 5 * sec, Size: 15 * sec}
	// window_end > 00:00:05 keeps two windows of a, three of b, one of c
	// and none of the NULL row.
	f := &plan.Filter{In: h, Pred: &expr.Func{Name: ">", Args: []expr.Expr{col(3, types.TTimestamp), tsLit(5 * sec)}, T: types.TBool}}
	out, kept, err := applyStages(&expr.Ctx{Mem: memoryPool}, []plan.Plan{h, f}, rec, true)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if got, want := fmt.Sprint(kept), "[0 0 1 1 1 2]"; got != want {
		t.Fatalf("kept %s, want %s", got, want)
	}
	if n := out.NumCols(); n != 4 {
		t.Fatalf("%d columns, want 4", n)
	}
}

// windowCloseOf finds a HOP window under the table function's projection
// and the row's time beside it, so a late row counts once: only its last
// window's copy.
func TestHopLastWindow(t *testing.T) {
	h := &plan.Hop{In: wmStream("s", 1, types.TText, types.TTimestamp), TS: col(1, types.TTimestamp), Slide: 5 * sec, Size: 15 * sec}
	// SELECT window_end, name, ts FROM HOP(...): the time moves to column 2.
	p := &plan.Project{In: h, Exprs: []expr.Expr{col(3, types.TTimestamp), col(0, types.TText), col(1, types.TTimestamp)}}
	agg := &plan.HashAgg{In: p, Keys: []expr.Expr{col(0, types.TTimestamp)}, Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}}}
	w := windowCloseOf(agg)
	if w == nil || w.Key != 0 || w.Offset != 0 || w.Hop == nil {
		t.Fatalf("windowCloseOf: %+v", w)
	}
	if r, ok := w.Hop.TS.(*expr.ColRef); !ok || r.Idx != 2 {
		t.Fatalf("row time %v, want column 2", w.Hop.TS)
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{7 * sec}, nil)
	b.AppendNull()
	ts := b.NewInt64Array()
	defer ts.Release()
	b.Release()
	// 00:00:07 is in the windows ending at 00:00:10, 15 and 20; the last
	// is its own. A row without a time has one window.
	for end, last := range map[int64]bool{10 * sec: false, 15 * sec: false, 20 * sec: true} {
		if got := w.Hop.IsLast(hopRows{TS: ts}, 0, end); got != last {
			t.Errorf("window ending %d: last %v", end, got)
		}
	}
	if !w.Hop.IsLast(hopRows{TS: ts}, 1, 0) {
		t.Error("NULL time: not its last window")
	}
	// A projection without the time: every window row counts.
	p2 := &plan.Project{In: h, Exprs: []expr.Expr{col(3, types.TTimestamp)}}
	agg2 := &plan.HashAgg{In: p2, Keys: []expr.Expr{col(0, types.TTimestamp)}}
	if w := windowCloseOf(agg2); w == nil || w.Hop != nil {
		t.Fatalf("without the time: %+v", w)
	}
}

// BenchmarkHopExpand expands 64K-row batches of (k BIGINT, ts TIMESTAMP)
// into their size/slide windows (and CUMULATE windows), as an edge stage
// does: input and output rows per second.
// docs/benchmarks/2026-12-02-hop-expand-stage.md.
//
//	go test ./exec/ -run '^$' -bench Hop -benchtime 20x -cpu 1
func BenchmarkHopExpand(b *testing.B) {
	mem := memory.NewGoAllocator()
	r := rand.New(rand.NewPCG(3, 5))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	const batch, batches = 64 << 10, 16
	var recs []arrow.RecordBatch
	for j := 0; j < batches; j++ {
		kb, tb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
		for i := 0; i < batch; i++ {
			kb.Append(r.Int64N(1000))
			tb.Append(int64(j*batch+i)*1000 + r.Int64N(1000)) // 1000 rows a second
		}
		cols := []arrow.Array{kb.NewArray(), tb.NewArray()}
		recs = append(recs, array.NewRecordBatch(schema, cols, batch))
		releaseAll(cols)
		kb.Release()
		tb.Release()
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	in := &plan.Batches{Ts: []types.T{types.TInt64, types.TTimestamp}}
	ectx := &expr.Ctx{Mem: mem}
	type hopCase struct {
		name string
		h    *plan.Hop
	}
	var cases []hopCase
	for _, w := range []int64{2, 5, 10} {
		cases = append(cases, hopCase{fmt.Sprintf("windows=%d", w), &plan.Hop{In: in, TS: col(1, types.TTimestamp), Slide: 2 * sec, Size: w * 2 * sec}})
	}
	// CUMULATE, step 2 s, max 10 steps: 5.5 windows a row on average.
	cases = append(cases, hopCase{"cumulate=10", &plan.Hop{In: in, TS: col(1, types.TTimestamp), Slide: 2 * sec, Size: 20 * sec, Cumulate: true}})
	for _, hc := range cases {
		h := hc.h
		b.Run(hc.name, func(b *testing.B) {
			var buf hopBuf
			var out int64
			for b.Loop() {
				for _, rec := range recs {
					o, _, err := h.Expand(ectx, mem, &buf, rec)
					if err != nil {
						b.Fatal(err)
					}
					out += o.NumRows()
					o.Release()
				}
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(batch*batches)*float64(b.N)/s, "rows/s")
			b.ReportMetric(float64(out)/s, "windowrows/s")
		})
	}
}

// A job's HOP stage under a window aggregate copies only the columns the
// aggregate reads (keys, arguments, the row's time); recording late rows
// keeps them all.
func TestPruneHops(t *testing.T) {
	bid := &storage.TableDef{ID: 7, Name: "bid", Columns: []storage.ColumnDef{
		{Name: "auction", Type: types.TInt64}, {Name: "url", Type: types.TText},
		{Name: "ts", Type: types.TTimestamp}, {Name: "extra", Type: types.TText}}}
	h := &plan.Hop{In: &plan.ScanStream{Table: bid}, TS: col(2, types.TTimestamp), Slide: 2 * sec, Size: 10 * sec}
	// SELECT *, window_start, window_end FROM bid, as the table function.
	star := &plan.Project{In: h, Exprs: []expr.Expr{col(0, types.TInt64), col(1, types.TText), col(2, types.TTimestamp),
		col(3, types.TText), col(4, types.TTimestamp), col(5, types.TTimestamp)}}
	agg := &plan.HashAgg{In: star, Keys: []expr.Expr{col(4, types.TTimestamp), col(0, types.TInt64)},
		Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}}}
	for _, record := range []bool{false, true} {
		g, err := compile(agg, 1)
		if err != nil {
			t.Fatal(err)
		}
		pruneHops(g, record)
		var used []bool
		for _, n := range g.nodes {
			if n.kind == nAgg {
				used = n.ins[0].stages[0].(*plan.Hop).Used
			}
		}
		want := "[true false true false]" // auction, ts
		if record {
			want = "[]"
		}
		if got := fmt.Sprint(used); got != want {
			t.Errorf("record %v: used %s, want %s", record, got, want)
		}
	}
	if h.Used != nil {
		t.Error("the plan's Hop was changed")
	}
	// The aggregate's state means windows of bid.ts of these sizes.
	ops, err := StateOperators(agg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ops["aggregate#0"], "keys(hop(bid.ts, 2000000us, 10000000us).window_start timestamp without time zone, bid.auction bigint)"; !strings.Contains(got, want) {
		t.Errorf("fingerprint %q, want it to contain %q", got, want)
	}
}

// CUMULATE(step 5 s, max 15 s): each row in the windows of its max-sized
// window's start that end after it, the earliest first; NULL in one.
func TestCumulateExpand(t *testing.T) {
	withChecked(t)
	h := &plan.Hop{In: hopInput(), TS: col(1, types.TTimestamp), Slide: 5 * sec, Size: 15 * sec, Cumulate: true}
	want := "a 1970-01-01 00:00:01 1970-01-01 00:00:00 1970-01-01 00:00:05\n" +
		"a 1970-01-01 00:00:01 1970-01-01 00:00:00 1970-01-01 00:00:10\n" +
		"a 1970-01-01 00:00:01 1970-01-01 00:00:00 1970-01-01 00:00:15\n" +
		"b 1970-01-01 00:00:05 1970-01-01 00:00:00 1970-01-01 00:00:10\n" +
		"b 1970-01-01 00:00:05 1970-01-01 00:00:00 1970-01-01 00:00:15\n" +
		"c 1969-12-31 23:59:58 1969-12-31 23:59:45 1970-01-01 00:00:00\n" +
		"n NULL NULL NULL"
	if got := runText(t, h, true); got != want {
		t.Fatalf("cumulate:\n%s\nwant\n%s", got, want)
	}
}

// A CUMULATE row's last window is its max-sized one, whether the
// aggregate's bound is window_end or window_start (all of a row's windows
// share the start: the row's window_end tells them apart).
func TestCumulateLastWindow(t *testing.T) {
	h := &plan.Hop{In: wmStream("s", 1, types.TText, types.TTimestamp), TS: col(1, types.TTimestamp), Slide: 5 * sec, Size: 15 * sec, Cumulate: true}
	ints := func(vs ...int64) *array.Int64 {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(vs, nil)
		return b.NewInt64Array()
	}
	ts := ints(7*sec, 7*sec)
	defer ts.Release()
	// SELECT window_end, window_start, ts FROM CUMULATE(...) grouped by
	// window_end: 00:00:07 is in [0, 10) and [0, 15); the last is [0, 15).
	p := &plan.Project{In: h, Exprs: []expr.Expr{col(3, types.TTimestamp), col(2, types.TTimestamp), col(1, types.TTimestamp)}}
	w := windowCloseOf(&plan.HashAgg{In: p, Keys: []expr.Expr{col(0, types.TTimestamp)}})
	if w == nil || w.Offset != 0 || w.Hop == nil || !w.Hop.Cumulate || w.Hop.End != nil {
		t.Fatalf("by window_end: %+v", w)
	}
	for end, last := range map[int64]bool{10 * sec: false, 15 * sec: true} {
		if got := w.Hop.IsLast(hopRows{TS: ts}, 0, end); got != last {
			t.Errorf("by window_end: window ending %d: last %v", end, got)
		}
	}
	// Grouped by window_start alone: the window closes at start + max and
	// the row's window_end (column 0) picks its last copy.
	w = windowCloseOf(&plan.HashAgg{In: p, Keys: []expr.Expr{col(1, types.TTimestamp)}})
	if w == nil || w.Offset != 15*sec || w.Hop == nil {
		t.Fatalf("by window_start: %+v", w)
	}
	if r, ok := w.Hop.End.(*expr.ColRef); !ok || r.Idx != 0 {
		t.Fatalf("by window_start: window_end %v, want column 0", w.Hop.End)
	}
	ends := ints(10*sec, 15*sec)
	defer ends.Release()
	for i, last := range []bool{false, true} {
		if got := w.Hop.IsLast(hopRows{TS: ts, End: ends}, i, 15*sec); got != last {
			t.Errorf("by window_start: copy %d: last %v", i, got)
		}
	}
}

// timedRows is n rows of (k BIGINT, ts TIMESTAMP): row i has k = i % keys
// and a time 10 ms after row i-1's.
func timedRows(n, keys int) arrow.RecordBatch {
	kb, tb := array.NewInt64Builder(memoryPool), array.NewInt64Builder(memoryPool)
	defer kb.Release()
	defer tb.Release()
	for i := 0; i < n; i++ {
		kb.Append(int64(i % keys))
		tb.Append(int64(i) * sec / 100)
	}
	return newRecord([]types.T{types.TInt64, types.TTimestamp}, []arrow.Array{kb.NewArray(), tb.NewArray()}, n)
}

// A batch that a HOP would expand past expandBatchRows is cut first: no
// output batch outgrows the bound, and no row is lost.
func TestHopOutputBatchesBounded(t *testing.T) {
	withChecked(t)
	const n, windows = 50_000, 10
	ts := []types.T{types.TInt64, types.TTimestamp}
	in := &plan.Batches{Recs: []arrow.RecordBatch{timedRows(n, 7)}, Ts: ts}
	defer in.Recs[0].Release()
	for _, cumulate := range []bool{false, true} {
		h := &plan.Hop{In: in, TS: col(1, types.TTimestamp), Slide: sec, Size: windows * sec, Cumulate: cumulate}
		in.Recs[0].Retain() // Run takes one reference
		rows, batches, largest := 0, 0, 0
		err := batch.Run(&plan.Ctx{Context: context.Background(), Expr: &expr.Ctx{Mem: memoryPool}}, h, func(r arrow.RecordBatch) error {
			defer r.Release()
			rows += int(r.NumRows())
			batches++
			largest = max(largest, int(r.NumRows()))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := n * windows
		if cumulate {
			want = 0 // a row at offset o of its max window is in the windows ending after it
			for i := 0; i < n; i++ {
				want += windows - int(int64(i)*sec/100%(windows*sec)/sec)
			}
		}
		if rows != want || largest > plan.ExpandBatchRows {
			t.Fatalf("cumulate=%v: %d rows in %d batches, the largest %d; want %d rows, batches of at most %d",
				cumulate, rows, batches, largest, want, plan.ExpandBatchRows)
		}
	}
}

// An outlet whose stages expand a batch past expandBatchRows cuts it
// first, as runHop does: no batch it sends outgrows the bound, and every
// window row keeps its source row's op and row position.
func TestOutletCutsExpandingBatches(t *testing.T) {
	withChecked(t)
	const n, windows = 20_000, 10
	ops := make([]Op, n)
	ids := make([]uint64, n)
	for i := 0; i < n; i++ {
		if i%3 == 0 {
			ops[i] = OpDelete
		}
		ids[i] = uint64(1000 + i)
	}
	ts := []types.T{types.TInt64, types.TTimestamp}
	rec := timedRows(n, n)
	h := &plan.Hop{In: &plan.Batches{Ts: ts}, TS: col(1, types.TTimestamp), Slide: sec, Size: windows * sec}
	ch := make(chan msg, n*windows/plan.ExpandBatchRows+8)
	o := &outlet{j: &Job{ctx: context.Background()}, stages: []plan.Plan{h}, outs: []chan msg{ch}, rowIDs: true}
	if err := o.emit(&expr.Ctx{Mem: memoryPool}, Chunk{Rec: rec, Ops: ops}, ids); err != nil {
		t.Fatal(err)
	}
	close(ch)
	rows, batches, largest := 0, 0, 0
	for m := range ch {
		k := m.c.Rec.Column(0).(*array.Int64)
		r := int(m.c.Rec.NumRows())
		rows += r
		batches++
		largest = max(largest, r)
		for i := 0; i < r; i++ {
			src := k.Value(i)
			if m.c.Ops[i] != ops[src] || m.rowIDs[i] != ids[src] {
				t.Fatalf("row of source row %d: op %v, position %d; want %v, %d", src, m.c.Ops[i], m.rowIDs[i], ops[src], ids[src])
			}
		}
		m.c.Rec.Release()
	}
	if rows != n*windows || batches < 2 || largest > plan.ExpandBatchRows {
		t.Fatalf("%d rows in %d batches, the largest %d; want %d rows in batches of at most %d",
			rows, batches, largest, n*windows, plan.ExpandBatchRows)
	}
}
