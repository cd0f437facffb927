package temporal

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// sink is an outlet that keeps what it is given.
type sink struct{ cs []op.Chunk }

func (s *sink) Emit(_ *expr.Ctx, c op.Chunk) error {
	s.cs = append(s.cs, c)
	return nil
}

// TestOp drives the node with a clock of its own: rows pass while their
// deadline is ahead, leave at the first barrier past it, and a retraction
// passes only for a row still kept.
func TestOp(t *testing.T) {
	ts := []types.T{types.TInt64, types.TTimestamp}
	col := &expr.ColRef{Idx: 1, T: types.TTimestamp}
	out := &sink{}
	o := New(Spec{Deadline: col}, ts, out, nil)
	clock := int64(100)
	o.SetClock(func() int64 { return clock })
	ectx := &expr.Ctx{Mem: opkit.Mem}
	rows := func(ops []types.ChangeOp, vals ...int64) op.Chunk {
		var encs []string
		for i := 0; i < len(vals); i += 2 {
			b := opkit.EncodeDatum(nil, types.Int(vals[i]), ts[0])
			encs = append(encs, string(opkit.EncodeDatum(b, types.Int(vals[i+1]), ts[1])))
		}
		return op.Chunk{Rec: opkit.DecodeRecord(ts, encs), Ops: ops}
	}
	got := func() string {
		var rows []string
		for _, c := range out.cs {
			for i := 0; i < int(c.Rec.NumRows()); i++ {
				o := types.ChangeInsert
				if c.Ops != nil {
					o = c.Ops[i]
				}
				rows = append(rows, fmt.Sprintf("%s %d", o, types.DatumAt(c.Rec.Column(0), i, types.TInt64).I))
			}
			c.Rec.Release()
		}
		out.cs = nil
		return strings.Join(rows, ", ")
	}
	// Row 1 is out at 150, row 2 at 300, row 3 is already out (deadline 100).
	if err := o.Push(ectx, rows(nil, 1, 150, 2, 300, 3, 100), 0); err != nil {
		t.Fatal(err)
	}
	if g := got(); g != "insert 1, insert 2" {
		t.Fatalf("push: %s", g)
	}
	clock = 200
	if err := o.Barrier(ectx, &op.Barrier{}, nil); err != nil {
		t.Fatal(err)
	}
	if g := got(); g != "delete 1" {
		t.Fatalf("barrier at 200: %s", g)
	}
	// Retracting row 1 (gone) passes nothing; row 2 (kept) passes.
	del := []types.ChangeOp{types.ChangeDelete, types.ChangeDelete}
	if err := o.Push(ectx, rows(del, 1, 150, 2, 300), 0); err != nil {
		t.Fatal(err)
	}
	if g := got(); g != "delete 2" {
		t.Fatalf("retractions: %s", g)
	}
	clock = 400
	if err := o.Barrier(ectx, &op.Barrier{}, nil); err != nil {
		t.Fatal(err)
	}
	if g := got(); g != "" || o.Kept() != 0 {
		t.Fatalf("barrier at 400: %q, %d rows kept", g, o.Kept())
	}
}
