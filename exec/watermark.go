package exec

import (
	"encoding/binary"
	"math"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Event time and watermarks.
//
// A watermark is an event time (a timestamp: microseconds since the Unix
// epoch) that a part of a job promises no more rows behind. It travels
// with barriers only: each source partition stamps the barrier message it
// passes on with its watermark (the largest event time it has read minus
// the stream's WATERMARK FOR delay), every multi-input step (the aligner:
// hash exchanges, joins, unions) takes the minimum over its inputs when the
// barrier is aligned, and every operator passes the result on with the
// barrier. An operator therefore sees, at each aligned barrier, the
// watermark of everything it has received up to that barrier
// (Watermark.At), and compares the rows of the next epoch with it.
//
// Watermarks never go back: the aligner keeps the largest it has passed on.
// A source partition with no new rows for stream.idle_timeout marks its
// watermark idle; the minimum ignores idle inputs, and if every input is
// idle the result is idle at the largest of theirs, so an idle partition no
// longer holds the job back. A source without WATERMARK FOR (and a view's
// changelog) has no watermark (NoWatermark), which holds back any minimum it
// enters: windows over it never close.
//
// Each source partition's largest event time is part of the job's state
// (under the reserved operator id jobStateOp), so a restored job resumes
// with the watermark it had at its checkpoint.

// eventTimed is the contract's op.WatermarkHandler: window aggregates,
// interval and window joins and top-N per window act on event time.
type eventTimed = op.WatermarkHandler

// NoWatermark is the watermark of a stream without event time, and of a
// job before its first row.
const NoWatermark = op.NoWatermark

// Watermark is an input's watermark as an operator sees it at a barrier
// (the operator contract's, exec/op).
type Watermark = op.Watermark

// jobStateOp is the operator id under which a job keeps its own state:
// source partitions' event time and its late-row count.
const jobStateOp uint32 = math.MaxUint32

// State keys under jobStateOp.
const (
	keyPartEventTime = 'p' // + table (8 bytes) + partition (4): largest event time
	keyLateRows      = 'l' // rows dropped as late (uvarint)
	keyOpWatermark   = 'w' // + operator id (4 bytes): its input watermark
	keyPartLost      = 'x' // + table (8 bytes) + partition (4): records its system deleted unread (uvarint)
)

func partEventTimeKey(table uint64, part uint32) []byte {
	return partKey(keyPartEventTime, table, part)
}

func partKey(kind byte, table uint64, part uint32) []byte {
	k := make([]byte, 0, 13)
	k = append(k, kind)
	k = binary.BigEndian.AppendUint64(k, table)
	return binary.BigEndian.AppendUint32(k, part)
}

// eventTime is a job's event time and late rows: it resumes each source
// partition's event time and each operator's input watermark after a
// restart and saves them at barriers, keeps the watermark and the count of
// late rows that reached the sink, and makes the operators' late-row logs
// and writes their rows (job.late_rows = 'record', late.go).
type eventTime struct {
	db   *storage.DB
	spec *JobSpec
	// resume: the job is durable and resumes from its committed state (it
	// is not rebuilt from the start of its input).
	resume bool
	// watermark is the watermark of the rows that reached the sink, as of
	// the last barrier; lateRows counts the rows dropped as late.
	watermark atomic.Int64
	lateRows  atomic.Int64
}

// partWatermark tracks one source partition's event time. Only the
// partition's goroutine uses it.
type partWatermark struct {
	col     int   // the event-time column among the source's columns; -1: none
	delay   int64 // µs
	maxTS   int64 // largest event time read; NoWatermark: none yet
	saved   int64 // maxTS as of the last barrier written
	lastRow time.Time
	idle    time.Duration // 0: never idle
}

// newPartWatermark sets up event time for a partition of src, resumed at
// the committed event time for a durable job.
func (et *eventTime) newPartWatermark(src *storage.TableDef, part uint32, changelog bool) (*partWatermark, error) {
	pw := &partWatermark{col: -1, maxTS: NoWatermark, saved: NoWatermark, lastRow: time.Now(), idle: et.spec.IdleTimeout}
	if src.Watermark == nil || changelog {
		return pw, nil
	}
	pw.col = src.Column(src.Watermark.Column)
	pw.delay = src.Watermark.DelayUS
	if pw.col < 0 {
		return pw, nil
	}
	if et.resume {
		v, err := et.db.State().Get(et.spec.ID, jobStateOp, partEventTimeKey(src.ID, part))
		if err != nil {
			return nil, err
		}
		if len(v) == 8 {
			pw.maxTS = int64(binary.BigEndian.Uint64(v))
			pw.saved = pw.maxTS
		}
	}
	return pw, nil
}

// observe takes the event times of a block of the source's rows.
func (pw *partWatermark) observe(rec arrow.RecordBatch) {
	if pw == nil || pw.col < 0 || rec.NumRows() == 0 {
		return
	}
	pw.lastRow = time.Now()
	col, ok := rec.Column(pw.col).(*array.Int64)
	if !ok {
		return
	}
	vals := col.Int64Values()
	mx := pw.maxTS
	for i, v := range vals {
		if v > mx && v != types.TimestampInfinity && col.IsValid(i) {
			mx = v
		}
	}
	pw.maxTS = mx
}

// mark stamps a barrier message with the partition's watermark and writes
// its event time into the epoch's batch w (nil: not durable) if it moved.
func (pw *partWatermark) mark(m *msg, jobID, table uint64, part uint32, w *storage.Batch) {
	m.wm = Watermark{At: NoWatermark}
	if pw == nil || pw.col < 0 {
		return
	}
	if pw.maxTS != NoWatermark {
		m.wm.At = pw.maxTS - pw.delay
	}
	m.wm.Idle = pw.idle > 0 && time.Since(pw.lastRow) >= pw.idle
	if w != nil && pw.maxTS != pw.saved {
		r := w.NewRun()
		r.PutState(jobID, jobStateOp, partEventTimeKey(table, part), binary.BigEndian.AppendUint64(nil, uint64(pw.maxTS)))
		w.AddRun(r)
		pw.saved = pw.maxTS
	}
}

// combineWatermarks is the watermark of a step with inputs ws (op.CombineWatermarks).
func combineWatermarks(ws []Watermark) Watermark { return op.CombineWatermarks(ws) }

// Watermark returns the watermark of the rows the job's sink has received
// (NoWatermark before the first barrier or without event time).
func (j *Job) Watermark() int64 { return j.et.watermark.Load() }

// LateRows is how many rows the job's window operators dropped as late
// since the job was created.
func (j *Job) LateRows() int64 { return j.et.lateRows.Load() }

// loadLateRows restores the late-row count committed with the job's state.
func (et *eventTime) loadLateRows() error {
	if !et.resume {
		return nil
	}
	v, err := et.db.State().Get(et.spec.ID, jobStateOp, []byte{keyLateRows})
	if err != nil || len(v) == 0 {
		return err
	}
	n, _ := binary.Uvarint(v)
	et.lateRows.Store(int64(n))
	return nil
}

// saveLateRows writes the late-row count into the sink's epoch batch when
// the epoch's barrier brought late rows (late: their count).
func (et *eventTime) saveLateRows(w *storage.Batch, late int64) {
	if late == 0 {
		return
	}
	n := et.lateRows.Add(late)
	if w == nil {
		return
	}
	r := w.NewRun()
	r.PutState(et.spec.ID, jobStateOp, []byte{keyLateRows}, binary.AppendUvarint(nil, uint64(n)))
	w.AddRun(r)
}

// resumeWatermark starts the aligner of operator op at the input watermark
// it had at the job's last committed epoch, so the rows replayed after a
// restart are judged late exactly as they were before it (a window closed
// then stays closed). Operators that drop late rows call it once, before
// reading, and saveWatermark at each barrier.
func (et *eventTime) resumeWatermark(al *aligner, op uint32) error {
	if !et.resume {
		return nil
	}
	v, err := et.db.State().Get(et.spec.ID, jobStateOp, binary.BigEndian.AppendUint32([]byte{keyOpWatermark}, op))
	if err != nil || len(v) != 8 {
		return err
	}
	al.wm = Watermark{At: int64(binary.BigEndian.Uint64(v))}
	al.saved = al.wm.At
	return nil
}

// saveWatermark writes operator op's input watermark into the epoch's
// batch w when it has moved.
func (et *eventTime) saveWatermark(w *storage.Batch, al *aligner, op uint32) {
	if w == nil || al.wm.At == al.saved {
		return
	}
	r := w.NewRun()
	r.PutState(et.spec.ID, jobStateOp, binary.BigEndian.AppendUint32([]byte{keyOpWatermark}, op),
		binary.BigEndian.AppendUint64(nil, uint64(al.wm.At)))
	w.AddRun(r)
	al.saved = al.wm.At
}
