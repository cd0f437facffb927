// Package batchtest holds what the tests of batch execution (exec/batch)
// and of the streaming runtime (exec) share: expression and Values
// builders, running a plan to text, a checked allocator and SQLSTATE
// checks. Only tests import it.
package batchtest

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Col is column i of type t.
func Col(i int, t types.T) *expr.ColRef { return &expr.ColRef{Idx: i, T: t} }

// Lit is the bigint v.
func Lit(v int64) expr.Expr { return &expr.Const{D: types.Int(v), T: types.TInt64} }

// Null is NULL of type t.
func Null(t types.T) expr.Expr { return &expr.Const{D: types.Null, T: t} }

// Str is the text s.
func Str(s string) expr.Expr { return &expr.Const{D: types.Str(s), T: types.TText} }

// KV builds a Values plan of (text, bigint) rows.
func KV(rows ...[2]expr.Expr) *plan.Values {
	v := &plan.Values{Ts: []types.T{types.TText, types.TInt64}}
	for _, r := range rows {
		v.Rows = append(v.Rows, []expr.Expr{r[0], r[1]})
	}
	return v
}

// RunText runs p as a batch query allocating from mem and returns its rows
// as text lines, sorted unless ordered.
func RunText(t testing.TB, mem memory.Allocator, p plan.Plan, ordered bool) string {
	t.Helper()
	ctx := &plan.Ctx{Context: context.Background(), Expr: &expr.Ctx{Mem: mem}}
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

// WithChecked makes the operators' kit (opkit.Mem) allocate from a checked
// allocator, which it returns, and fails the test if anything is left
// allocated at the end.
func WithChecked(t testing.TB) memory.Allocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	old := opkit.Mem
	opkit.Mem = mem
	t.Cleanup(func() {
		opkit.Mem = old
		mem.AssertSize(t, 0)
	})
	return mem
}

// WantCode fails the test unless err is a *sqlerr.Error with SQLSTATE
// code, and returns it.
func WantCode(t testing.TB, err error, code string) *sqlerr.Error {
	t.Helper()
	var e *sqlerr.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("got %v, want SQLSTATE %s", err, code)
	}
	return e
}
