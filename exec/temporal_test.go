package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

func TestSplitTemporal(t *testing.T) {
	ts := &expr.ColRef{Idx: 1, T: types.TTimestamp, Name: "ts"}
	id := &expr.ColRef{Idx: 0, T: types.TInt64, Name: "id"}
	now := &expr.Func{Name: "now", T: types.TTimestamp}
	hour := &expr.Const{D: types.Datum{IV: arrow.MonthDayNanoInterval{Nanoseconds: 3600e9}}, T: types.TInterval}
	minus := &expr.Func{Name: "-", Args: []expr.Expr{now, hour}, T: types.TTimestamp}
	cmp := func(op string, a, b expr.Expr) expr.Expr {
		return &expr.Func{Name: op, Args: []expr.Expr{a, b}, T: types.TBool}
	}
	and := func(a, b expr.Expr) expr.Expr { return cmp("and", a, b) }
	idPos := cmp(">", id, &expr.Const{D: types.Int(0), T: types.TInt64})
	for _, tc := range []struct {
		pred      expr.Expr
		deadline  string // "" : refused
		inclusive bool
		rest      bool
	}{
		{cmp(">", ts, minus), "(ts + ", false, false},
		{cmp(">=", ts, minus), "(ts + ", true, false},
		{cmp("<", minus, ts), "(ts + ", false, false},
		{cmp("<=", minus, ts), "(ts + ", true, false},
		{cmp(">", ts, now), "ts", false, false},
		{cmp(">", ts, &expr.Func{Name: "+", Args: []expr.Expr{now, hour}, T: types.TTimestamp}), "(ts - ", false, false},
		{and(idPos, cmp(">", ts, minus)), "(ts + ", false, true},
		{cmp("<", ts, now), "", false, false},
		{cmp("=", ts, now), "", false, false},
		{cmp("or", cmp(">", ts, minus), idPos), "", false, false},
		{and(cmp(">", ts, minus), cmp(">", ts, now)), "", false, false},
		{cmp(">", id, &expr.Func{Name: "extract", Args: []expr.Expr{now}, T: types.TInt64}), "", false, false},
	} {
		spec, rest, err := splitTemporal(&Filter{Pred: tc.pred})
		if tc.deadline == "" {
			var se *sqlerr.Error
			if !errors.As(err, &se) || se.Code != sqlerr.FeatureNotSupported {
				t.Errorf("%s: %v, want 0A000", tc.pred, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.pred, err)
			continue
		}
		if got := spec.Deadline.String(); !strings.HasPrefix(got, tc.deadline) || spec.Inclusive != tc.inclusive || (rest != nil) != tc.rest {
			t.Errorf("%s: deadline %s inclusive %v rest %v; want %s... %v %v", tc.pred, got, spec.Inclusive, rest, tc.deadline, tc.inclusive, tc.rest)
		}
	}
}

// TestTemporalOp drives the node with a clock of its own: rows pass while
// their deadline is ahead, leave at the first barrier past it, and a
// retraction passes only for a row still kept.
func TestTemporalOp(t *testing.T) {
	ts := []types.T{types.TInt64, types.TTimestamp}
	col := &expr.ColRef{Idx: 1, T: types.TTimestamp}
	in := &gedge{from: &gnode{kind: nSource}, stages: []Plan{&Batches{Ts: ts}}}
	n := &gnode{kind: nTemporal, temporal: &temporalSpec{Deadline: col}, ins: []*gedge{in}}
	ch := make(chan msg, 64)
	j := &Job{ctx: context.Background()}
	o := newTemporalOp(j, n)
	o.out = &outlet{j: j, outs: []chan msg{ch}}
	clock := int64(100)
	o.now = func() int64 { return clock }
	ectx := &expr.Ctx{Mem: memoryPool}
	rows := func(ops []Op, vals ...int64) Chunk {
		var cols [][]types.Datum
		for i := 0; i < len(vals); i += 2 {
			cols = append(cols, []types.Datum{types.Int(vals[i]), types.Int(vals[i+1])})
		}
		return Chunk{Rec: decodeRecord(ts, encodeRows(ts, cols)), Ops: ops}
	}
	got := func() string {
		var out []string
		for len(ch) > 0 {
			m := <-ch
			for i := 0; i < int(m.c.Rec.NumRows()); i++ {
				op := OpInsert
				if m.c.Ops != nil {
					op = m.c.Ops[i]
				}
				out = append(out, fmt.Sprintf("%s %d", op, types.DatumAt(m.c.Rec.Column(0), i, types.TInt64).I))
			}
			m.c.Rec.Release()
		}
		return strings.Join(out, ", ")
	}
	// Row 1 is out at 150, row 2 at 300, row 3 is already out (deadline 100).
	if err := o.Push(ectx, rows(nil, 1, 150, 2, 300, 3, 100), 0); err != nil {
		t.Fatal(err)
	}
	if g := got(); g != "insert 1, insert 2" {
		t.Fatalf("push: %s", g)
	}
	clock = 200
	if err := o.Barrier(ectx, &Barrier{}, nil); err != nil {
		t.Fatal(err)
	}
	if g := got(); g != "delete 1" {
		t.Fatalf("barrier at 200: %s", g)
	}
	// Retracting row 1 (gone) passes nothing; row 2 (kept) passes.
	if err := o.Push(ectx, rows([]Op{OpDelete, OpDelete}, 1, 150, 2, 300), 0); err != nil {
		t.Fatal(err)
	}
	if g := got(); g != "delete 2" {
		t.Fatalf("retractions: %s", g)
	}
	clock = 400
	if err := o.Barrier(ectx, &Barrier{}, nil); err != nil {
		t.Fatal(err)
	}
	if g := got(); g != "" || len(o.rows) != 0 {
		t.Fatalf("barrier at 400: %q, %d rows kept", g, len(o.rows))
	}
}

func encodeRows(ts []types.T, rows [][]types.Datum) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		var b []byte
		for c, d := range r {
			b = encodeDatum(b, d, ts[c])
		}
		out[i] = string(b)
	}
	return out
}
