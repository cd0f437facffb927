package batch

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/exec/versionjoin"
	"github.com/streamdb/streamdb/storage"
)

// runVersioned is a batch query's versioned join: the rule over all rows,
// the build side being the table's history (ScanStream.History).
func runVersioned(ctx *plan.Ctx, p *plan.HashJoin, emit func(arrow.RecordBatch) error) error {
	right, err := collect(ctx, p.Right)
	if err != nil {
		return err
	}
	left, err := collect(ctx, p.Left)
	if err != nil {
		if right != nil {
			right.Release()
		}
		return err
	}
	var build, probe []arrow.RecordBatch
	if right != nil {
		build = append(build, right)
	}
	if left != nil {
		probe = append(probe, left)
	}
	return versionjoin.Batch(ctx.Expr, plan.VersionSpec(p), build, probe, emitOutlet(emit))
}

// emitOutlet is a batch query's emit callback as an op.Outlet.
type emitOutlet func(arrow.RecordBatch) error

func (e emitOutlet) Emit(_ *expr.Ctx, c op.Chunk) error { return e(c.Rec) }

// scanKeyedHistory reads every row a keyed table inserted or updated to,
// in log order per partition: the table's versions.
func scanKeyedHistory(ctx *plan.Ctx, t *storage.TableDef, snap storage.Reader, emit func(arrow.RecordBatch) error) error {
	ts := plan.ColumnTypes(t)
	return readLogBlocks(ctx, t, snap, func(rec arrow.RecordBatch) error {
		rec, ops := plan.SplitOps(rec)
		defer rec.Release()
		var keep []int
		for i, o := range ops {
			if o.Sign() > 0 {
				keep = append(keep, i)
			}
		}
		if len(keep) == 0 {
			return nil
		}
		return emit(opkit.TakeRecordMem(ctx.Alloc(), rec, keep, ts))
	})
}
