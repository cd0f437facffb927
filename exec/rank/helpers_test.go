package rank

import (
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/exec/over"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// newTestOp makes an instance of spec emitting into out, on a state table
// that snapshots at checkpoints (the memory backend), with no budget.
func newTestOp(spec *Spec, out op.Outlet) *Op {
	return New(spec, Node{Node: opkittest.Node(out, &opkittest.SnapState{})})
}

func kvRefs() (k, v *expr.ColRef) {
	return &expr.ColRef{Idx: 0, T: types.TInt64, Name: "k"}, &expr.ColRef{Idx: 1, T: types.TInt64, Name: "v"}
}

// windowSpec is a rank spec of window functions fs over (k, v) rows.
func windowSpec(partition []expr.Expr, order []over.SortKey, hi int64, fs ...over.Func) *Spec {
	ts := []types.T{types.TInt64, types.TInt64}
	out := append([]types.T(nil), ts...)
	for _, f := range fs {
		out = append(out, f.T)
	}
	return &Spec{Funcs: fs, InTs: ts, OutTs: out, Partition: partition, Order: order, Hi: hi, AppendOnly: hi >= 0}
}

// memDB is an in-memory database, for epoch batches.
func memDB(t *testing.T) *storage.DB {
	db, err := storage.Open("db", storage.Options{FS: storage.MemFS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
