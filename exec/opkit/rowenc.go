package opkit

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/streamdb/streamdb/types"
)

// RowEncoder encodes the rows of a batch in encodeRow's format a column at
// a time: a pass that sizes every row, then one typed loop per column that
// writes its value into each row's slot. The rows share one buffer, which
// is also readable as one string (rowString), so a batch's rows cost one
// allocation, not one each.
type RowEncoder struct {
	buf  []byte
	ends []int // row i is buf[ends[i-1]:ends[i]] (ends[-1] = 0)
	pos  []int
	str  string // buf as a string, once asked for
	// key: the rows are keys (EncodeKeys), so unconstrained NUMERIC values
	// drop their display scales and 1.5 and 1.50 encode equally; as values
	// (Encode) they keep them (EncodeValueDatum).
	key     bool
	scratch []byte
}

func FixedWidth(t types.T) int {
	switch t.Physical() {
	case types.PhysBool, types.PhysInt64, types.PhysFloat64:
		return 8
	case types.PhysDecimal, types.PhysInterval:
		return 16
	}
	return 0
}

// Encode encodes rows [0, n) of cols, of types ts, as values: an
// unconstrained NUMERIC keeps its display scale.
func (e *RowEncoder) Encode(cols []arrow.Array, ts []types.T, n int) {
	e.key = false
	e.encode(cols, ts, n)
}

// EncodeKeys encodes rows [0, n) of cols, of types ts, as keys: equal
// values encode equally whatever their display scales.
func (e *RowEncoder) EncodeKeys(cols []arrow.Array, ts []types.T, n int) {
	e.key = true
	e.encode(cols, ts, n)
}

// scaledValues reports whether column a of type t is encoded as values
// carrying display scales (an unconstrained NUMERIC column with scale
// bytes, encoded as values, not keys): such a column takes
// EncodeValueDatum in both the sizing and the writing pass.
func (e *RowEncoder) scaledValues(a arrow.Array, t types.T) bool {
	return !e.key && t.Kind == types.Numeric && t.Prec == 0 && types.DScales(a) != nil
}

func (e *RowEncoder) encode(cols []arrow.Array, ts []types.T, n int) {
	e.str = ""
	e.ends = Resize(e.ends, n)
	clear(e.ends)
	ends := e.ends
	for c, a := range cols {
		nulls := a.NullN() > 0
		if e.scaledValues(a, ts[c]) {
			for i := range ends {
				e.scratch = EncodeValueDatum(e.scratch[:0], types.DatumAt(a, i, ts[c]), ts[c])
				ends[i] += len(e.scratch)
			}
			continue
		}
		if w := FixedWidth(ts[c]); w > 0 {
			if _, ok := a.(*array.Null); ok {
				for i := range ends {
					ends[i]++
				}
				continue
			}
			for i := range ends {
				if nulls && a.IsNull(i) {
					ends[i]++
				} else {
					ends[i] += 1 + w
				}
			}
			continue
		}
		if _, ok := a.(*array.FixedSizeBinary); ok { // uuid: its canonical text (EncodeDatum)
			for i := range ends {
				if nulls && a.IsNull(i) {
					ends[i]++
				} else {
					ends[i] += 2 + types.UUIDTextLen
				}
			}
			continue
		}
		if s, ok := a.(*array.String); ok {
			for i := range ends {
				if nulls && s.IsNull(i) {
					ends[i]++
				} else {
					l := len(s.ValueStr(i))
					ends[i] += 1 + UvarintLen(uint64(l)) + l
				}
			}
			continue
		}
		var scratch []byte
		for i := range ends {
			scratch = EncodeDatum(scratch[:0], types.DatumAt(a, i, ts[c]), ts[c])
			ends[i] += len(scratch)
		}
	}
	e.pos = Resize(e.pos, n)
	total := 0
	for i, l := range ends {
		e.pos[i] = total
		total += l
		ends[i] = total
	}
	e.buf = Resize(e.buf, total)
	buf, pos := e.buf, e.pos
	for c, a := range cols {
		nulls := a.NullN() > 0
		if e.scaledValues(a, ts[c]) {
			t := ts[c]
			for i, p := range pos {
				pos[i] = p + len(EncodeValueDatum(buf[p:p], types.DatumAt(a, i, t), t))
			}
			continue
		}
		switch a := a.(type) {
		case *array.Int64:
			vs := a.Int64Values()
			for i, p := range pos {
				if nulls && a.IsNull(i) {
					buf[p], pos[i] = 0, p+1
					continue
				}
				buf[p] = 1
				binary.BigEndian.PutUint64(buf[p+1:], uint64(vs[i])^(1<<63))
				pos[i] = p + 9
			}
		case *array.Float64:
			vs := a.Float64Values()
			for i, p := range pos {
				if nulls && a.IsNull(i) {
					buf[p], pos[i] = 0, p+1
					continue
				}
				f := vs[i]
				if f == 0 {
					f = 0 // -0 encodes as 0
				}
				buf[p] = 1
				binary.BigEndian.PutUint64(buf[p+1:], math.Float64bits(f))
				pos[i] = p + 9
			}
		case *array.Decimal128:
			vs := a.Values()
			for i, p := range pos {
				if nulls && a.IsNull(i) {
					buf[p], pos[i] = 0, p+1
					continue
				}
				buf[p] = 1
				binary.BigEndian.PutUint64(buf[p+1:], uint64(vs[i].HighBits()))
				binary.BigEndian.PutUint64(buf[p+9:], vs[i].LowBits())
				pos[i] = p + 17
			}
		case *array.String:
			for i, p := range pos {
				if nulls && a.IsNull(i) {
					buf[p], pos[i] = 0, p+1
					continue
				}
				s := a.Value(i)
				buf[p] = 1
				p += 1 + binary.PutUvarint(buf[p+1:], uint64(len(s)))
				pos[i] = p + copy(buf[p:], s)
			}
		case *array.FixedSizeBinary:
			for i, p := range pos {
				if nulls && a.IsNull(i) {
					buf[p], pos[i] = 0, p+1
					continue
				}
				buf[p], buf[p+1] = 1, types.UUIDTextLen
				pos[i] = p + 2 + len(types.AppendUUIDText(buf[p+2:p+2], a.Value(i)))
			}
		default:
			t := ts[c]
			for i, p := range pos {
				pos[i] = p + len(EncodeDatum(buf[p:p], types.DatumAt(a, i, t), t))
			}
		}
	}
}

// Size is the bytes of the rows encoded.
func (e *RowEncoder) Size() int { return len(e.buf) }

// Row returns row i's encoding; it is valid until the next encode.
func (e *RowEncoder) Row(i int) []byte {
	start := 0
	if i > 0 {
		start = e.ends[i-1]
	}
	return e.buf[start:e.ends[i]]
}

// RowString returns row i's encoding as a string that shares one
// allocation with the batch's other rows and outlives the encoder's reuse.
func (e *RowEncoder) RowString(i int) string {
	if e.str == "" && len(e.buf) > 0 {
		e.str = string(e.buf)
	}
	start := 0
	if i > 0 {
		start = e.ends[i-1]
	}
	return e.str[start:e.ends[i]]
}

func Resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func UvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// BytesView is b as a string without a copy, for map lookups only.
func BytesView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// AppendTake appends rows idx of a (idx -1: NULL) to bl, a builder of a's
// type, in a typed loop.
func AppendTake(bl array.Builder, a arrow.Array, idx []int, t types.T) {
	bl.Reserve(len(idx))
	noNulls := a.NullN() == 0
	switch arr := a.(type) {
	case *array.Int64:
		b := bl.(*array.Int64Builder)
		vs := arr.Int64Values()
		for _, i := range idx {
			if i < 0 || (!noNulls && arr.IsNull(i)) {
				b.AppendNull()
			} else {
				b.UnsafeAppend(vs[i])
			}
		}
	case *array.Float64:
		b := bl.(*array.Float64Builder)
		vs := arr.Float64Values()
		for _, i := range idx {
			if i < 0 || (!noNulls && arr.IsNull(i)) {
				b.AppendNull()
			} else {
				b.UnsafeAppend(vs[i])
			}
		}
	case *array.Decimal128:
		if db, ok := bl.(*types.DecimalBuilder); ok {
			appendTakeDS(db, arr, idx)
			break
		}
		b := bl.(*array.Decimal128Builder)
		vs := arr.Values()
		for _, i := range idx {
			if i < 0 || (!noNulls && arr.IsNull(i)) {
				b.AppendNull()
			} else {
				b.UnsafeAppend(vs[i])
			}
		}
	case *array.String:
		b := bl.(*array.StringBuilder)
		for _, i := range idx {
			if i < 0 || arr.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(arr.Value(i))
			}
		}
	case *array.FixedSizeBinary:
		b := bl.(*array.FixedSizeBinaryBuilder)
		for _, i := range idx {
			if i < 0 || arr.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(arr.Value(i))
			}
		}
	case *array.List:
		// An array: each row's elements taken from the list's values in
		// their own layout (types.ArrayArrow).
		b := bl.(types.ListAppender)
		vals, elem := arr.ListValues(), types.ArrayElem(t)
		var sub []int
		for _, i := range idx {
			if i < 0 || arr.IsNull(i) {
				b.AppendNull()
				continue
			}
			s, e := arr.ValueOffsets(i)
			sub = sub[:0]
			for j := s; j < e; j++ {
				sub = append(sub, int(j))
			}
			b.Append(true)
			AppendTake(b.ValueBuilder(), vals, sub, elem)
		}
	default:
		for _, i := range idx {
			if i < 0 || a.IsNull(i) {
				bl.AppendNull()
			} else {
				types.AppendDatum(bl, types.DatumAt(a, i, t), t)
			}
		}
	}
}

// RowDecoder appends encoded rows (encodeRow's format) to one builder per
// column, with a typed path for each physical layout.
type RowDecoder struct {
	ts   []types.T
	bls  []array.Builder
	ints []*array.Int64Builder // per column: non-nil for BIGINT-like columns
}

func NewRowDecoder(ts []types.T, bls []array.Builder) *RowDecoder {
	d := &RowDecoder{ts: ts, bls: bls, ints: make([]*array.Int64Builder, len(ts))}
	for c, b := range bls {
		if ib, ok := b.(*array.Int64Builder); ok && ts[c].Physical() == types.PhysInt64 {
			d.ints[c] = ib
		}
	}
	return d
}

// AppendRow appends one encoded row.
func (d *RowDecoder) AppendRow(enc string) {
	p := 0
	for c, t := range d.ts {
		if enc[p] == 0 {
			d.bls[c].AppendNull()
			p++
			continue
		}
		if ib := d.ints[c]; ib != nil {
			ib.Append(int64(binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(enc[p+1:]), 8)) ^ (1 << 63)))
			p += 9
			continue
		}
		switch b := d.bls[c].(type) {
		case *array.Float64Builder:
			f := math.Float64frombits(binary.BigEndian.Uint64([]byte(enc[p+1 : p+9])))
			if t.Kind == types.Float32 {
				f = float64(float32(f))
			}
			b.Append(f)
			p += 9
			continue
		case *array.Decimal128Builder:
			if enc[p] == dsMarker {
				break // a display scale follows: DecodeDatum below
			}
			b.Append(decimal128.New(int64(binary.BigEndian.Uint64([]byte(enc[p+1:p+9]))), binary.BigEndian.Uint64([]byte(enc[p+9:p+17]))))
			p += 17
			continue
		case *array.StringBuilder:
			n, k := binary.Uvarint([]byte(enc[p+1 : min(len(enc), p+11)]))
			s := p + 1 + k
			b.Append(enc[s : s+int(n)])
			p = s + int(n)
			continue
		case *array.FixedSizeBinaryBuilder: // uuid: its canonical text (EncodeDatum)
			u := types.UUIDBytes(enc[p+2 : p+2+types.UUIDTextLen])
			b.Append(u[:])
			p += 2 + types.UUIDTextLen
			continue
		}
		rest := []byte(enc[p:])
		dd, after, _ := DecodeDatum(rest, t)
		types.AppendDatum(d.bls[c], dd, t)
		p += len(rest) - len(after)
	}
}

// appendTakeDS is AppendTake's loop for an unconstrained NUMERIC builder:
// the values and their display scales (types/dscale.go).
func appendTakeDS(b *types.DecimalBuilder, arr *array.Decimal128, idx []int) {
	vs, ds := arr.Values(), types.DScales(arr)
	noNulls := arr.NullN() == 0
	for _, i := range idx {
		switch {
		case i < 0 || (!noNulls && arr.IsNull(i)):
			b.AppendNull()
		case ds != nil:
			b.AppendDS(vs[i], ds[i])
		default:
			b.Append(vs[i])
		}
	}
}
