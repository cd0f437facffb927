package sql

import (
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/types"
)

// intCol is a BIGINT column of the COPY batch being parsed: its values,
// written in place by row index, and the rows that are NULL. The validity
// bitmap is made only when the batch is completed, and only if a row is
// NULL, so parsing a value is one store.
type intCol struct {
	vals  []int64 // len is the batch's row capacity (copyIn.capRows)
	nulls []int32 // rows of the batch that are NULL (their value is 0)
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
// taken when every field is a plain decimal of at most 18 digits (a BIGINT
// column) or valid UTF-8 with no backslash (text format) or quote (CSV),
// carriage return or NUL that is not the NULL string (a TEXT column of
// unlimited length), or a uuid in uuid_out's spelling (a UUID column), fields are separated by the delimiter, and the line
// ends in a bare newline (which fixes the COPY's line ends as newlines). The
// first line that is anything else, or that the chunk cuts, is left to the
// general path (addLine), which parses it from its start: so every line is
// parsed by exactly one of the two, with the same result.
//
// BIGINT values are written straight into their column; TEXT fields are
// appended once the whole line is known to be taken.
func (c *copyIn) fastLines(data []byte) (int, error) {
	d := c.opts.delim
	stop := c.stops
	null := c.opts.null
	last := len(c.cols) - 1
	if cap(c.fields) < len(c.cols) {
		c.fields = make([][]byte, len(c.cols))
	}
	c.fields = c.fields[:len(c.cols)] // TEXT fields of the line; BIGINT ones go straight to their column
	if len(c.uuidBuf) < len(c.cols) {
		c.uuidBuf = make([][16]byte, len(c.cols))
	}
	done := 0
	for done < len(data) && data[done] != '\\' { // \. may end the data
		if c.rows == c.capRows {
			c.growRows()
		}
		row := c.rows
		p := done
		for fi, col := range c.cols {
			end := d
			if fi == last {
				end = '\n'
			}
			if ic := c.ints[col]; ic != nil {
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
				ic.vals[row] = v
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
			if len(f) == len(null) && string(f) == null || high >= utf8.RuneSelf && !utf8.Valid(f) {
				return done, nil
			}
			if c.uuids[col] != nil && !types.ParseCanonicalUUID(c.uuidBuf[fi][:], f) {
				return done, nil // another spelling, or an error: the general path's
			}
			c.fields[fi] = f
			p++
		}
		for fi, col := range c.cols {
			if sb := c.strs[col]; sb != nil {
				sb.BinaryBuilder.Append(c.fields[fi])
			} else if ub := c.uuids[col]; ub != nil {
				ub.Append(c.uuidBuf[fi][:])
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
