package exec

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// wmStream is a scan of stream name whose columns are ts (named by
// position: c0, c1, ...), with WATERMARK FOR on column wm (-1: none).
func wmStream(name string, wm int, ts ...types.T) *plan.ScanStream {
	t := &storage.TableDef{Name: name}
	for i, typ := range ts {
		t.Columns = append(t.Columns, storage.ColumnDef{Name: "c" + string(rune('0'+i)), Type: typ})
	}
	if wm >= 0 {
		t.Watermark = &storage.Watermark{Column: t.Columns[wm].Name}
	}
	return &plan.ScanStream{Table: t}
}

func secs(n int64) expr.Expr {
	return &expr.Const{T: types.TInterval, D: types.Datum{IV: arrow.MonthDayNanoInterval{Nanoseconds: n * 1e9}}}
}

// TestTraceTime: the watermark bounds its own column through renames,
// filters, unions and HOP stages, shifted by fixed intervals, and nothing
// computed otherwise or read through a join or a view.
func TestTraceTime(t *testing.T) {
	s := wmStream("s", 1, types.TInt64, types.TTimestamp, types.TTimestamp)
	ts, other := col(1, types.TTimestamp), col(2, types.TTimestamp)
	shifted := func(name string, e expr.Expr, n int64) expr.Expr {
		return &expr.Func{Name: name, Args: []expr.Expr{e, secs(n)}, T: types.TTimestamp}
	}
	// SELECT c2 AS a, c1 - 7200 s AS b, c1 AS c FROM s WHERE ...
	renamed := &plan.Filter{In: &plan.Project{In: s, Exprs: []expr.Expr{other, shifted("-", ts, 7200), ts}}, Pred: &expr.Const{D: types.Boolean(true), T: types.TBool}}
	plain := wmStream("p", -1, types.TInt64, types.TTimestamp, types.TTimestamp)
	cases := []struct {
		name  string
		p     plan.Plan
		e     expr.Expr
		shift int64 // µs; ok false if why is set
		why   string
	}{
		{"the column", s, ts, 0, ""},
		{"another column", s, other, 0, "s.c2 has no watermark: the watermark of s is on c1"},
		{"no WATERMARK FOR", plain, ts, 0, "p.c1 has no watermark: p has no WATERMARK FOR"},
		{"plus", s, shifted("+", ts, 5), 5e6, ""},
		{"minus minus", s, shifted("-", shifted("-", ts, 5), 2), -7e6, ""},
		{"a rename of another column", renamed, col(0, types.TTimestamp), 0, "s.c2 has no watermark"},
		{"a rename, shifted", renamed, col(1, types.TTimestamp), -7200e6, ""},
		{"a rename, shifted again", renamed, shifted("+", col(1, types.TTimestamp), 3600), -3600e6, ""},
		{"computed", s, &expr.Func{Name: "+", Args: []expr.Expr{ts, &expr.Func{Name: "-", Args: []expr.Expr{other, ts}, T: types.TInterval}}, T: types.TTimestamp}, 0, "is not a column with a watermark"},
		{"union: the least", &plan.Union{Ins: []plan.Plan{renamed, &plan.Project{In: s, Exprs: []expr.Expr{ts, ts, ts}}}}, col(1, types.TTimestamp), -7200e6, ""},
		{"union with a branch without", &plan.Union{Ins: []plan.Plan{s, plain}}, ts, 0, "p.c1 has no watermark"},
		{"hop passes columns", &plan.Hop{In: s, TS: ts, Slide: 5e6, Size: 10e6}, ts, 0, ""},
		{"hop bounds are not columns", &plan.Hop{In: s, TS: ts, Slide: 5e6, Size: 10e6}, col(3, types.TTimestamp), 0, "computed by Hop"},
		{"through a join", &plan.HashJoin{Left: s, Right: s}, ts, 0, "s.c1 has no watermark: it is read through a join"},
	}
	for _, c := range cases {
		tr := traceTime(c.p, c.e)
		switch {
		case c.why == "" && (!tr.ok || tr.shift != c.shift):
			t.Errorf("%s: %+v, want shift %d", c.name, tr, c.shift)
		case c.why != "" && (tr.ok || !strings.Contains(tr.why, c.why)):
			t.Errorf("%s: %+v, want no bound: %q", c.name, tr, c.why)
		}
	}
}

// TestTraceTimeWindowAggregate: a window aggregate's closing key is ahead
// of the watermark its rows meet downstream; its other columns are not.
func TestTraceTimeWindowAggregate(t *testing.T) {
	s := wmStream("s", 1, types.TInt64, types.TTimestamp)
	size := secs(10)
	end := &expr.Func{Name: "tumble_end", Args: []expr.Expr{col(1, types.TTimestamp), size}, T: types.TTimestamp}
	start := &expr.Func{Name: "tumble_start", Args: []expr.Expr{col(1, types.TTimestamp), size}, T: types.TTimestamp}
	agg := &plan.HashAgg{In: s, Keys: []expr.Expr{end}, Aggs: []plan.AggSpec{{Kind: plan.AggMax, Arg: col(1, types.TTimestamp), T: types.TTimestamp}}}
	if tr := traceColumn(agg, 0); !tr.ok || tr.shift != 1 {
		t.Errorf("window_end: %+v, want shift 1", tr)
	}
	if tr := traceColumn(agg, 1); tr.ok {
		t.Errorf("max(ts): %+v, want no bound", tr)
	}
	agg.Keys = []expr.Expr{start}
	if tr := traceColumn(agg, 0); !tr.ok || tr.shift != 1-10e6 {
		t.Errorf("window_start: %+v, want shift 1 - 10 s", tr)
	}
	plain := wmStream("p", -1, types.TInt64, types.TTimestamp)
	if tr := traceColumn(&plan.HashAgg{In: plain, Keys: []expr.Expr{end}}, 0); tr.ok {
		t.Errorf("window over a stream without a watermark: %+v", tr)
	}
}
