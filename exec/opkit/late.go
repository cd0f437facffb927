package opkit

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Late rows recorded (job.late_rows = 'record').
//
// An operator that drops a row as late notes it in its LateLog (the row
// as text, the event time it was judged by and the watermark it met); at
// the barrier the epoch's notes travel with the barrier message, like the
// late-row count, and every merge point (aligner) concatenates its
// inputs'. The view's sink writes them into its epoch batch numbered by
// the job's late-row count (storage.PutLateRows), so they commit with the
// epoch, exactly once. An instance notes at most storage.LateRowsKept rows
// per epoch (the table keeps no more than that per job anyway); the count
// stays exact.

// LateLog collects one operator instance's late rows of an epoch; nil (or
// off) under job.late_rows = 'drop'.
type LateLog struct {
	op   string    // the operator, as streamdb_late_rows shows it
	ts   []types.T // its input's column types
	rows []storage.LateRow
}

// NewLateLog returns the late-row log of the operator named op (as
// streamdb_late_rows shows it), whose input has column types ts.
func NewLateLog(op string, ts []types.T) *LateLog { return &LateLog{op: op, ts: ts} }

// Note records row i of rec, judged late at event time et against
// watermark wm.
func (l *LateLog) Note(rec arrow.RecordBatch, i int, et, wm int64) {
	if l == nil || len(l.rows) >= storage.LateRowsKept {
		return
	}
	l.rows = append(l.rows, storage.LateRow{Operator: l.op, Row: l.text(rec, i), EventTime: et, Watermark: wm})
}

// text is row i of rec in PostgreSQL's text forms, as a tuple.
func (l *LateLog) text(rec arrow.RecordBatch, i int) string {
	if len(l.ts) != int(rec.NumCols()) {
		return RowText(rec, i)
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

// Take returns the rows noted since the last call.
func (l *LateLog) Take() []storage.LateRow {
	if l == nil {
		return nil
	}
	r := l.rows
	l.rows = nil
	return r
}

// MergeLate appends b's late rows to a's, keeping at most
// storage.LateRowsKept.
func MergeLate(a, b []storage.LateRow) []storage.LateRow {
	if room := storage.LateRowsKept - len(a); room < len(b) {
		b = b[:max(room, 0)]
	}
	return append(a, b...)
}
