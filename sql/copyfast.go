package sql

import (
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/types"
)

// intCol is a column of the COPY batch being parsed whose values are one
// 8-byte word each (integers, dates, times and timestamps as int64,
// floating point as float64 bits): its values, written in place by row
// index, and the rows that are NULL. The validity bitmap is made only when
// the batch is completed, and only if a row is NULL, so parsing a value is
// one store.
type intCol struct {
	vals  []int64 // len is the batch's row capacity (copyIn.capRows)
	nulls []int32 // rows of the batch that are NULL (their value is 0)
	float bool    // vals hold float64 bits
	f32   bool    // a REAL column: values are rounded to float32
}

// set stores d, a value of the column's type, in row.
func (ic *intCol) set(row int, d types.Datum) {
	switch {
	case ic.f32:
		ic.vals[row] = int64(math.Float64bits(float64(float32(d.F))))
	case ic.float:
		ic.vals[row] = int64(math.Float64bits(d.F))
	default:
		ic.vals[row] = d.I
	}
}

// copyKind is how fastLines parses a column's fields.
type copyKind uint8

const (
	kindBig   copyKind = iota // BIGINT: digits accumulated as they are read
	kindInt                   // SMALLINT, INTEGER: the same, range-checked
	kindFixed                 // floating point, dates, times, timestamps: types.ParseTextBytes into an intCol
	kindText                  // TEXT and VARCHAR(n): the bytes, once the line is taken
	kindUUID                  // UUID in uuid_out's spelling: its 16 bytes, once the line is taken
	kindJSONB                 // JSONB in text format: encoded into copyIn.jbuf by copyIn.jp, appended once the line is taken
	kindDatum                 // BOOLEAN, NUMERIC, INTERVAL, JSON in text format: types.ParseTextBytes, appended once the line is taken
	kindSlow                  // anything else: fastLines does not take tables with it
)

// kindOf is how fastLines parses columns of type t in a COPY of the CSV
// format or not.
func kindOf(t types.T, csv bool) copyKind {
	switch t.Kind {
	case types.Int64:
		return kindBig
	case types.Int16, types.Int32:
		return kindInt
	case types.Float32, types.Float64, types.Timestamp, types.Date, types.Time, types.TimeTZ:
		return kindFixed
	case types.Text:
		if t.Pad { // CHAR(n): stored without its trailing blanks
			return kindSlow
		}
		return kindText
	case types.UUID:
		return kindUUID
	case types.Bool, types.Numeric, types.Interval:
		return kindDatum
	case types.JSON, types.JSONB:
		if csv { // a JSON text holds quotes: every CSV field of it is quoted
			return kindSlow
		}
		if t.Kind == types.JSONB {
			return kindJSONB
		}
		return kindDatum
	}
	return kindSlow
}

// finish returns the first n values as an array of type t and starts the
// column's next batch with no capacity.
func (ic *intCol) finish(t arrow.DataType, n int) arrow.Array {
	var valid *memory.Buffer
	if len(ic.nulls) > 0 {
		bm := make([]byte, bitutil.BytesForBits(int64(n)))
		bitutil.SetBitsTo(bm, 0, int64(n), true)
		for _, r := range ic.nulls {
			bitutil.ClearBit(bm, int(r))
		}
		valid = memory.NewBufferBytes(bm)
	}
	vals := memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(ic.vals[:n:n]))
	data := array.NewData(t, n, []*memory.Buffer{valid, vals}, nil, len(ic.nulls), 0)
	a := array.MakeFromData(data)
	data.Release()
	ic.vals, ic.nulls = nil, ic.nulls[:0]
	return a
}

// minCopyRows is the row capacity of a COPY's first batch; it doubles up
// to copyBatchRows.
const minCopyRows = 1024

// growRows makes room for at least one more row in every BIGINT column.
func (c *copyIn) growRows() {
	n := min(max(2*c.capRows, minCopyRows), copyBatchRows)
	c.reserveRows(n)
}

// reserveRows sets the BIGINT columns' row capacity to n (at least the rows
// already parsed), keeping their values.
func (c *copyIn) reserveRows(n int) {
	n = max(n, c.rows+1)
	for _, ic := range c.ints {
		if ic != nil {
			vals := make([]int64, n)
			copy(vals, ic.vals[:c.rows])
			ic.vals = vals
		}
	}
	c.capRows = n
}

// fastStops is the table of the bytes that stop fastLines' scan of a TEXT
// field: the delimiter, newline, the backslash (text format) or quote
// (CSV), carriage return and NUL.
func fastStops(delim, special byte) *[256]bool {
	var t [256]bool
	for _, b := range []byte{delim, '\n', special, '\r', 0} {
		t[b] = true
	}
	return &t
}

// fastLines parses the whole lines at the start of data that need none of
// the general path's work, and returns the bytes it consumed. A line is
// taken when every field holds no backslash (text format) or quote (CSV),
// carriage return or NUL, is not the NULL string and parses as its
// column's type: a plain decimal of at most 18 digits for BIGINT (and in
// range for SMALLINT and INTEGER), valid UTF-8 within its length for TEXT
// and VARCHAR(n), uuid_out's spelling for UUID, what
// types.ParseTextBytes accepts for the others; and
// the line ends in a bare newline (which fixes the COPY's line ends as
// newlines). The first line that is anything else, or that the chunk
// cuts, is left to the general path (addLine), which parses it from its
// start with PostgreSQL's rules and errors. Such a field holds no escape,
// so its bytes are the value the general path would parse: every line is
// parsed by exactly one of the two, with the same result.
//
// Integer values are written straight into their column (a line left to
// the general path overwrites its row); the others are appended once the
// whole line is known to be taken.
func (c *copyIn) fastLines(data []byte) (int, error) {
	d := c.opts.delim
	stop := c.stops
	null := c.opts.null
	last := len(c.cols) - 1
	if cap(c.fields) < len(c.cols) {
		c.fields = make([][]byte, len(c.cols))
	}
	c.fields = c.fields[:len(c.cols)] // TEXT fields of the line; integers go straight to their column
	done := 0
	for done < len(data) && data[done] != '\\' { // \. may end the data
		if c.rows == c.capRows {
			c.growRows()
		}
		row := c.rows
		p := done
		c.jbuf = c.jbuf[:0]
		for fi, col := range c.cols {
			end := d
			if fi == last {
				end = '\n'
			}
			kind := c.kinds[col]
			if kind <= kindInt {
				neg := p < len(data) && data[p] == '-'
				if neg {
					p++
				}
				start := p
				var v int64
				for p < len(data) {
					x := data[p] - '0'
					if x > 9 {
						break
					}
					v = v*10 + int64(x)
					p++
				}
				if p == start || p-start > 18 || p == len(data) || data[p] != end {
					return done, nil
				}
				if neg {
					v = -v
				}
				if kind == kindInt && (v > math.MaxInt32 || v < math.MinInt32 || c.ts[col].Kind == types.Int16 && (v > math.MaxInt16 || v < math.MinInt16)) {
					return done, nil
				}
				c.ints[col].vals[row] = v
				p++
				continue
			}
			start := p
			var high byte // the OR of the field's bytes: >= 0x80 if not ASCII
			for p < len(data) {
				ch := data[p]
				if stop[ch] {
					break
				}
				high |= ch
				p++
			}
			if p == len(data) || data[p] != end {
				return done, nil
			}
			f := data[start:p:p]
			if len(f) == len(null) && string(f) == null {
				return done, nil
			}
			p++
			if kind == kindText {
				if high >= utf8.RuneSelf && !utf8.Valid(f) {
					return done, nil
				}
				if n := c.ts[col].Prec; n > 0 && len(f) > int(n) && (high < utf8.RuneSelf || utf8.RuneCount(f) > int(n)) {
					return done, nil // too long: the general path errors or trims trailing blanks
				}
				c.fields[fi] = f
				continue
			}
			if high >= utf8.RuneSelf && (kind != kindDatum && kind != kindJSONB || !utf8.Valid(f)) { // numbers, dates, times and uuids are ASCII
				return done, nil
			}
			if kind == kindUUID {
				if !types.ParseCanonicalUUID(c.uuidBuf[fi][:], f) {
					return done, nil // another spelling, or an error: the general path's
				}
				continue
			}
			if kind == kindJSONB {
				var err error
				if c.jbuf, err = c.jp.Append(c.jbuf, f); err != nil {
					return done, nil // the general path errors
				}
				c.jends[fi] = len(c.jbuf)
				continue
			}
			v, err := types.ParseTextBytes(f, c.ts[col])
			if err != nil {
				return done, nil
			}
			if kind == kindFixed {
				c.ints[col].set(row, v)
			} else {
				c.datums[fi] = v
			}
		}
		jstart := 0 // where the field's jsonb value starts in jbuf
		for fi, col := range c.cols {
			switch c.kinds[col] {
			case kindText:
				c.strs[col].BinaryBuilder.Append(c.fields[fi])
			case kindUUID:
				c.uuids[col].Append(c.uuidBuf[fi][:])
			case kindJSONB:
				c.jsonbs[col].BinaryBuilder.Append(c.jbuf[jstart:c.jends[fi]])
				jstart = c.jends[fi]
			case kindDatum:
				types.AppendDatum(c.bls[col], c.datums[fi], c.ts[col])
			}
		}
		c.eol = eolNL
		c.line++
		c.rows++
		c.bytes += p - done
		done = p
		if err := c.rowDone(); err != nil {
			return done, err
		}
	}
	return done, nil
}
