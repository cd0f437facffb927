package storage

import (
	"encoding/binary"
	"encoding/json"

	"github.com/streamdb/streamdb/sqlerr"
)

// Late rows recorded under job.late_rows = 'record' (streamdb_late_rows).
//
// Key: q/<job><seq>, seq a job-wide number that only grows (the job's
// late-row count at the row, so a replayed epoch writes the same keys).
// The job's sink writes them with its epoch batch, so a row is recorded
// exactly once across crashes, and deletes, in the same batch, the ones
// now LateRowsKept or more numbers behind the count: the table holds the
// last LateRowsKept rows of each job. Dropping the job deletes its rows (DeleteJobData).

// LateRowsKept is how many recorded late rows each job keeps.
const LateRowsKept = 1000

// LateRow is a row an operator dropped as late.
type LateRow struct {
	Job       string `json:"job"`
	Operator  string `json:"operator"`
	Row       string `json:"row"`
	EventTime int64  `json:"event_time"` // µs: the time the row was judged by
	Watermark int64  `json:"watermark"`  // µs: the operator's watermark it met
	Epoch     uint64 `json:"epoch"`
	Seq       uint64 `json:"seq"`
}

func lateRowKey(job, seq uint64) []byte {
	k := binary.BigEndian.AppendUint64([]byte("q/"), job)
	return binary.BigEndian.AppendUint64(k, seq)
}

// PutLateRows records rows (their Seq set) and deletes the job's rows
// numbered in [from, to), with the epoch. (Point deletes: an epoch batch
// takes no range deletions; the caller bounds the range by the rows that
// can exist, LateRowsKept.)
func (b *Batch) PutLateRows(job uint64, rows []LateRow, from, to uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := from; s < to; s++ {
		b.b.Delete(lateRowKey(job, s), nil)
	}
	for i := range rows {
		v, _ := json.Marshal(&rows[i])
		b.b.Set(lateRowKey(job, rows[i].Seq), v, nil)
	}
}

// LateRows returns every recorded late row, by job then number.
func (es Errors) LateRows() ([]LateRow, error) {
	var out []LateRow
	err := es.db.scanPrefix(es.db.pdb, []byte("q/"), func(_, v []byte) error {
		var r LateRow
		if err := json.Unmarshal(v, &r); err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "late row record: %v", err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}
