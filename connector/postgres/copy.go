package postgres

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// copyEncoder turns record batches into COPY's text format: a row per
// line, columns split by tabs, \N for NULL, backslash escapes. streamdb's
// text output of each type is PostgreSQL's, so the server parses it as
// its own. An upsert's staging rows lead with the change's order in the
// transaction and its kind (1: upsert, 0: delete).
type copyEncoder struct {
	ts       []types.T
	upsert   bool
	snapshot bool // rows without an op column: all inserts
	sink     string
	view     string
	buf      []byte
	tmp      []byte
	seq      int64
	rows     int
}

// add encodes rec into buf (replacing what buf held).
func (e *copyEncoder) add(rec arrow.RecordBatch) error {
	e.buf = e.buf[:0]
	n := int(rec.NumRows())
	var ops *array.Int64
	if !e.snapshot {
		c, ok := rec.Column(int(rec.NumCols()) - 1).(*array.Int64)
		if !ok {
			return sqlerr.New(sqlerr.Internal, "postgres sink %s: a changelog block without its op column", e.sink)
		}
		ops = c
	}
	cols := rec.Columns()[:len(e.ts)]
	for i := 0; i < n; i++ {
		op := connector.OpInsert
		if ops != nil {
			op = connector.Op(ops.Value(i))
		}
		if e.upsert {
			e.seq++
			e.buf = strconv.AppendInt(e.buf, e.seq, 10)
			if op.Sign() < 0 {
				e.buf = append(e.buf, "\t0"...)
			} else {
				e.buf = append(e.buf, "\t1"...)
			}
		} else if op.Sign() < 0 {
			return sqlerr.New(sqlerr.FeatureNotSupported, "postgres sink %s: type 'append' got a retraction from view %s", e.sink, e.view)
		}
		for c, col := range cols {
			if c > 0 || e.upsert {
				e.buf = append(e.buf, '\t')
			}
			e.appendValue(col, i, e.ts[c])
		}
		e.buf = append(e.buf, '\n')
		e.rows++
	}
	return nil
}

// appendValue appends column col's row i, typed loops for the common
// layouts and the types package's text output for the rest.
func (e *copyEncoder) appendValue(col arrow.Array, i int, t types.T) {
	if col.IsNull(i) {
		e.buf = append(e.buf, `\N`...)
		return
	}
	switch a := col.(type) {
	case *array.Int64:
		switch t.Kind {
		case types.Int16, types.Int32, types.Int64:
			e.buf = strconv.AppendInt(e.buf, a.Value(i), 10)
			return
		}
	case *array.String:
		// Only these hold their text output; bytea (its bytes), jsonb (its
		// binary layout) and char(n) (unpadded) go through AppendText.
		if t.Kind == types.Text && !t.Pad || t.Kind == types.JSON || t.Kind == types.UUID {
			e.buf = appendEscaped(e.buf, a.Value(i))
			return
		}
	}
	e.tmp = types.AppendText(e.tmp[:0], types.DatumAt(col, i, t), t)
	e.buf = appendEscaped(e.buf, e.tmp)
}

// appendEscaped appends s with COPY text's escapes.
func appendEscaped[S string | []byte](buf []byte, s S) []byte {
	start := 0
	for j := 0; j < len(s); j++ {
		var esc byte
		switch s[j] {
		case '\\':
			esc = '\\'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case '\t':
			esc = 't'
		default:
			continue
		}
		buf = append(buf, s[start:j]...)
		buf = append(buf, '\\', esc)
		start = j + 1
	}
	return append(buf, s[start:]...)
}
