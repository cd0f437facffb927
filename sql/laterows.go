package sql

import (
	"github.com/streamdb/streamdb/types"
)

// showLateRows is streamdb_late_rows: the rows jobs dropped as late under
// job.late_rows = 'record' (the last storage.LateRowsKept of each job), by
// job, oldest first. event_time is the time the operator judged the row by
// (a window aggregate: the end of the row's window; a join: the row's
// time), lateness how far the watermark it met was past it.
func (e sysTables) showLateRows() (*table, error) {
	t := &table{cols: []Column{{Name: "job", T: types.TText}, {Name: "operator", T: types.TText}, {Name: "row_text", T: types.TText},
		{Name: "event_time", T: types.TTimestamp}, {Name: "watermark", T: types.TTimestamp}, {Name: "lateness", T: types.TInterval},
		{Name: "epoch", T: types.TInt64}, {Name: "seq", T: types.TInt64}}}
	rows, err := e.db.Errors().LateRows()
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		t.add(str(r.Job), str(r.Operator), str(r.Row), types.Int(r.EventTime), types.Int(r.Watermark),
			types.Datum{IV: types.SubTimestamps(r.Watermark, r.EventTime)}, types.Int(int64(r.Epoch)), types.Int(int64(r.Seq)))
	}
	return t, nil
}
