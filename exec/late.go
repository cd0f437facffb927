package exec

import (
	"fmt"

	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Late rows recorded (job.late_rows = 'record'): opkit.LateLog collects an
// operator instance's; here the job makes them and the sink writes them.

// lateLog collects one operator instance's late rows of an epoch (opkit).
type lateLog = opkit.LateLog

// newLateLog returns the late-row log of operator kind id, whose input
// has column types ts; nil unless the job records late rows.
func (et *eventTime) newLateLog(kind string, id uint32, ts []types.T) *lateLog {
	if !et.spec.RecordLate || et.spec.View == nil {
		return nil
	}
	return opkit.NewLateLog(fmt.Sprintf("%s %d", kind, id), ts)
}

// mergeLate appends b's late rows to a's, keeping at most
// storage.LateRowsKept.
func mergeLate(a, b []storage.LateRow) []storage.LateRow { return opkit.MergeLate(a, b) }

// recordLateRows writes the late rows a barrier brought to the sink into
// the epoch's batch w, numbered up to n, the job's late-row count with
// them (late of them new), and deletes the rows that fell
// storage.LateRowsKept or more below n: only rows numbered after the
// previous count minus storage.LateRowsKept can still exist, so at most
// that many deletions.
func (et *eventTime) recordLateRows(w *storage.Batch, rows []storage.LateRow, epoch uint64, late, n int64) {
	if len(rows) == 0 || w == nil {
		return
	}
	first := uint64(n) - uint64(len(rows)) + 1
	for i := range rows {
		rows[i].Job, rows[i].Epoch, rows[i].Seq = et.spec.Name, epoch, first+uint64(i)
	}
	const kept = storage.LateRowsKept
	prev := uint64(n - late)
	var from, to uint64 // [from, to): numbers that fall out now
	if prev >= kept {
		from = prev - kept + 1
	}
	if uint64(n) >= kept {
		to = min(uint64(n)-kept+1, prev+1)
	}
	w.PutLateRows(et.spec.ID, rows, from, max(from, to))
}

// watermarkKeeper is an operator run by opTask that drops late rows
// (eventTimed): opTask resumes its input watermark after a restart and
// checkpoints it at each barrier (window aggregates, window and interval
// joins, top-N per window), and carries its recorded late rows with the barrier.
type watermarkKeeper interface {
	eventTimed
	keepsWatermark() bool
	opID() uint32
	takeLate() []storage.LateRow
}
