package exec

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
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
		spec, rest, err := splitTemporal(&plan.Filter{Pred: tc.pred})
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
