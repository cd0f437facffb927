package exec

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Rows whose expressions fail (job.error_policy). A batch whose stages
// raise a data error (SQLSTATE class 22) is run again one row at a time to
// find the rows that raise it; under 'skip' (the default) each is recorded
// in the epoch's error log (streamdb_job_errors, committed with the epoch,
// so a replay after a crash records it once) and the others go on; under
// 'fail' the job fails naming the first.

// eachRowAlone runs try on each row of rec alone and returns the rows it
// accepts; for each other row it calls bad, whose error stops it.
func eachRowAlone(rec arrow.RecordBatch, try func(one arrow.RecordBatch) error, bad func(i int, err error) error) ([]int, error) {
	n := int(rec.NumRows())
	good := make([]int, 0, n)
	for i := 0; i < n; i++ {
		one := rec.NewSlice(int64(i), int64(i+1))
		e := try(one)
		one.Release()
		if e == nil {
			good = append(good, i)
			continue
		}
		if err := bad(i, e); err != nil {
			return nil, err
		}
	}
	return good, nil
}

// Rows that fail after a stateful operator have no stream position; their
// records are keyed as these partitions (streamdb_job_errors shows NULL).
const (
	// GroupErrorPartition holds the errors of view rows computed from an
	// aggregate's groups (HAVING, the SELECT list over the aggregates),
	// keyed by the group: the record holds the group's latest failure.
	GroupErrorPartition = ^uint32(0)
	// OutputErrorPartition holds the errors of rows an operator put out
	// (a join's, a top-N's), keyed by epoch and a sequence number.
	OutputErrorPartition = ^uint32(0) - 1
)

// stagesSkippingRows applies stages to rec after they raised a data error
// on it: the rows whose stages fail are left out. One that retracts a row
// (a delete, an update's old value) goes silently, as the row it retracts
// went in its turn or its key's row goes with it; for each other one bad
// is called, whose error stops it. kept maps the output to rec's rows.
func stagesSkippingRows(ectx *expr.Ctx, stages []plan.Plan, rec arrow.RecordBatch, ops []Op, bad func(i int, se *sqlerr.Error) error) (arrow.RecordBatch, []int, error) {
	good, err := eachRowAlone(rec, func(one arrow.RecordBatch) error {
		res, _, e := applyStages(ectx, stages, one, false)
		if res != nil {
			res.Release()
		}
		return e
	}, func(i int, e error) error {
		if ops != nil && (ops[i] == OpDelete || ops[i] == OpUpdateBefore) {
			return nil
		}
		return bad(i, sqlerr.As(e))
	})
	if err != nil {
		return nil, nil, err
	}
	sub := takeRecord(rec, good, plan.ExprTypes(plannedExprs(rec)))
	defer sub.Release()
	out, kept, err := applyStages(ectx, stages, sub, true)
	if err != nil {
		return nil, nil, err
	}
	for i, k := range kept {
		kept[i] = good[k]
	}
	return out, kept, nil
}

// failingRow is a row of the view's job whose expression failed with se:
// under 'fail' the job's error naming it (what: where the row is), under
// 'skip' nil once record has kept it.
func (spec *JobSpec) failingRow(se *sqlerr.Error, what string, record func(storage.JobError)) error {
	if !spec.SkipErrors {
		return &sqlerr.Error{Code: se.Code, Msg: se.Msg, Detail: fmt.Sprintf("view %s, %s", spec.Name, what)}
	}
	record(storage.JobError{Job: spec.Name, Code: se.Code, Message: se.Msg, At: time.Now().UTC()})
	return nil
}

// groupStagesSkipping is stagesSkippingRows over an aggregate's changes at
// the view's sink: a change whose stages fail leaves its group without a
// view row. keyOf returns change r's view key; failed gets the record's
// offset of each group recorded, failedNow[r] is set for each change r
// recorded.
func (vs *viewSink) groupStagesSkipping(ectx *expr.Ctx, stages []plan.Plan, rec arrow.RecordBatch, ops []Op, keyOf func(r int) []byte, w *storage.Batch, failed map[uint64]bool, failedNow []bool) (arrow.RecordBatch, []int, error) {
	return stagesSkippingRows(ectx, stages, rec, ops, func(i int, se *sqlerr.Error) error {
		row := rowText(rec, i)
		return vs.j.spec.failingRow(se, "group row "+row, func(e storage.JobError) {
			e.Partition, e.Offset, e.Row = GroupErrorPartition, groupErrorOffset(keyOf(i)), row
			failed[e.Offset] = true
			failedNow[i] = true
			w.PutJobError(vs.j.spec.ID, e)
		})
	})
}

// groupErrorOffset is the offset of the record of the group whose view key
// is key.
func groupErrorOffset(key []byte) uint64 {
	h := fnv.New64a()
	h.Write(key)
	return h.Sum64()
}

// groupComputes drops the record of the group whose view key is key, if
// failed says it has one: its row computes again (or HAVING drops it, or
// the group is gone), so it is no longer left out of the view (and no longer counted in SHOW
// JOBS' error_rows or a read's notice).
func (vs *viewSink) groupComputes(key []byte, w *storage.Batch, failed map[uint64]bool) {
	if len(failed) == 0 {
		return
	}
	if off := groupErrorOffset(key); failed[off] {
		delete(failed, off)
		w.DeleteJobError(vs.j.spec.ID, GroupErrorPartition, off)
	}
}

// outputStagesSkipping is stagesSkippingRows over an operator's output on
// its way out of o; the records wait in o for the epoch's barrier
// (recordOutputErrors).
func (o *outlet) outputStagesSkipping(ectx *expr.Ctx, rec arrow.RecordBatch, ops []Op) (arrow.RecordBatch, []int, error) {
	return stagesSkippingRows(ectx, o.stages, rec, ops, func(i int, se *sqlerr.Error) error {
		row := rowText(rec, i)
		return o.j.spec.failingRow(se, "row "+row, func(e storage.JobError) {
			e.Partition, e.Row = OutputErrorPartition, row
			o.errs = append(o.errs, e)
		})
	})
}

// recordOutputErrors writes the rows o skipped in the epoch of barrier m
// into the epoch's writes, which the barrier carries.
func (o *outlet) recordOutputErrors(m msg) {
	if len(o.errs) == 0 || m.w == nil {
		return
	}
	for _, e := range o.errs {
		e.Offset = m.barrier.Epoch<<24 | uint64(o.j.errSeq.Add(1))&(1<<24-1)
		m.w.PutJobError(o.j.spec.ID, e)
	}
	o.errs = o.errs[:0]
}
