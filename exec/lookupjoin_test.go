package exec

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// TestLookupJoinOp drives a LEFT lookup join: right changes emit nothing,
// left rows wait for the barrier and meet the right side as it is then,
// and nothing emitted is retracted when the right side changes later.
func TestLookupJoinOp(t *testing.T) {
	db, err := storage.Open("db", storage.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j := &Job{spec: JobSpec{ID: 1, View: &storage.TableDef{ID: 1}}, db: db, ctx: ctx}
	ch := make(chan msg, 64)
	k, _ := kvRefs()
	ts := []types.T{types.TInt64, types.TInt64}
	spec := &HashJoin{Left: &Batches{Ts: ts}, Right: &Batches{Ts: ts}, Kind: JoinLeft,
		LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}, Lookup: true}
	op := newJoinOp(j, &gnode{kind: nJoin, join: spec})
	op.out = &outlet{j: j, outs: []chan msg{ch}}
	ectx := j.exprCtx()
	out := func() []string {
		var rows []string
		for len(ch) > 0 {
			m := <-ch
			rec := m.c.Rec
			for i := 0; i < int(rec.NumRows()); i++ {
				if m.c.Ops != nil && m.c.Ops[i] != OpInsert {
					t.Errorf("a lookup join emitted op %v", m.c.Ops[i])
				}
				var s string
				for c := 0; c < int(rec.NumCols()); c++ {
					col := rec.Column(c).(*array.Int64)
					if col.IsNull(i) {
						s += " NULL"
					} else {
						s += fmt.Sprintf(" %d", col.Value(i))
					}
				}
				rows = append(rows, s[1:])
			}
			rec.Release()
		}
		slices.Sort(rows)
		return rows
	}
	push := func(side int, c Chunk) {
		t.Helper()
		if err := op.Push(ectx, c, side); err != nil {
			t.Fatal(err)
		}
	}
	barrier := func(e uint64) {
		t.Helper()
		if err := op.Barrier(ectx, &Barrier{Epoch: e}, db.NewEpochBatch()); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, want ...string) {
		t.Helper()
		if got := out(); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", step, got, want)
		}
	}

	push(1, Chunk{Rec: kvRecord([][2]int64{{1, 10}, {2, 20}})})
	check("right rows")
	push(0, Chunk{Rec: kvRecord([][2]int64{{1, 100}, {3, 300}})})
	check("left rows before the barrier")
	push(1, signedChunk([][2]int64{{1, 10}}, OpDelete))
	push(1, signedChunk([][2]int64{{1, 11}}, OpInsert))
	check("a right update")
	barrier(1)
	check("barrier 1", "1 100 1 11", "3 300 NULL NULL")
	push(1, signedChunk([][2]int64{{2, 20}}, OpDelete))
	push(1, Chunk{Rec: kvRecord([][2]int64{{3, 30}})})
	push(0, Chunk{Rec: kvRecord([][2]int64{{2, 200}, {3, 301}, {1, 101}})})
	barrier(2)
	check("barrier 2", "1 101 1 11", "2 200 NULL NULL", "3 301 3 30")
	if n := len(op.groups); n != 2 {
		t.Errorf("the join holds %d groups, want the right side's 2", n)
	}
	for _, g := range op.groups {
		if len(g.rows[0]) != 0 {
			t.Errorf("the join kept %d left rows of a group", len(g.rows[0]))
		}
	}
}
