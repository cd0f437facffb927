package exec

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Late rows recorded (job.late_rows = 'record').
//
// An operator that drops a row as late notes it in its lateLog (the row
// as text, the event time it was judged by and the watermark it met); at
// the barrier the epoch's notes travel with the barrier message, like the
// late-row count, and every merge point (aligner) concatenates its
// inputs'. The view's sink writes them into its epoch batch numbered by
// the job's late-row count (storage.PutLateRows), so they commit with the
// epoch, exactly once. An instance notes at most storage.LateRowsKept rows
// per epoch (the table keeps no more than that per job anyway); the count
// stays exact.

// lateLog collects one operator instance's late rows of an epoch; nil (or
// off) under job.late_rows = 'drop'.
type lateLog struct {
	op   string    // the operator, as streamdb_late_rows shows it
	ts   []types.T // its input's column types
	rows []storage.LateRow
}

// newLateLog returns the late-row log of operator kind id, whose input
// has column types ts; nil unless the job records late rows.
func (j *Job) newLateLog(kind string, id uint32, ts []types.T) *lateLog {
	if !j.spec.RecordLate || j.spec.View == nil {
		return nil
	}
	return &lateLog{op: fmt.Sprintf("%s %d", kind, id), ts: ts}
}

// note records row i of rec, judged late at event time et against
// watermark wm.
func (l *lateLog) note(rec arrow.RecordBatch, i int, et, wm int64) {
	if l == nil || len(l.rows) >= storage.LateRowsKept {
		return
	}
	l.rows = append(l.rows, storage.LateRow{Operator: l.op, Row: l.text(rec, i), EventTime: et, Watermark: wm})
}

// text is row i of rec in PostgreSQL's text forms, as a tuple.
func (l *lateLog) text(rec arrow.RecordBatch, i int) string {
	if len(l.ts) != int(rec.NumCols()) {
		return rowText(rec, i)
	}
	var b strings.Builder
	b.WriteByte('(')
	for c, t := range l.ts {
		if c > 0 {
			b.WriteString(", ")
		}
		col := rec.Column(c)
		if col.IsNull(i) {
			b.WriteString("NULL")
			continue
		}
		b.WriteString(types.TextOf(types.DatumAt(col, i, t), t))
	}
	b.WriteByte(')')
	return b.String()
}

// take returns the rows noted since the last call.
func (l *lateLog) take() []storage.LateRow {
	if l == nil {
		return nil
	}
	r := l.rows
	l.rows = nil
	return r
}

// mergeLate appends b's late rows to a's, keeping at most
// storage.LateRowsKept.
func mergeLate(a, b []storage.LateRow) []storage.LateRow {
	if room := storage.LateRowsKept - len(a); room < len(b) {
		b = b[:max(room, 0)]
	}
	return append(a, b...)
}

// recordLateRows writes the late rows a barrier brought to the sink into
// the epoch's batch w, numbered up to n, the job's late-row count with
// them (late of them new), and deletes the rows that fell
// storage.LateRowsKept or more below n: only rows numbered after the
// previous count minus storage.LateRowsKept can still exist, so at most
// that many deletions.
func (j *Job) recordLateRows(w *storage.Batch, rows []storage.LateRow, epoch uint64, late, n int64) {
	if len(rows) == 0 || w == nil {
		return
	}
	first := uint64(n) - uint64(len(rows)) + 1
	for i := range rows {
		rows[i].Job, rows[i].Epoch, rows[i].Seq = j.spec.Name, epoch, first+uint64(i)
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
	w.PutLateRows(j.spec.ID, rows, from, max(from, to))
}

// watermarkKeeper is an operator run by runOp that drops late rows
// (eventTimed): runOp resumes its input watermark after a restart and
// checkpoints it at each barrier, as runAgg does for window aggregates,
// and carries its recorded late rows with the barrier.
type watermarkKeeper interface {
	eventTimed
	keepsWatermark() bool
	opID() uint32
	takeLate() []storage.LateRow
}
