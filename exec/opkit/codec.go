package opkit

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Mem is the allocator of operator-internal arrays.
var Mem memory.Allocator = memory.NewGoAllocator()

// EncodeDatum appends d's self-delimiting encoding (used for state keys,
// state values and view rows). Equal values encode equally.
func EncodeDatum(buf []byte, d types.Datum, t types.T) []byte {
	if d.Null {
		return append(buf, 0)
	}
	buf = append(buf, 1)
	switch t.Physical() {
	case types.PhysBool, types.PhysInt64:
		return binary.BigEndian.AppendUint64(buf, uint64(d.I)^(1<<63))
	case types.PhysFloat64:
		f := d.F
		if f == 0 {
			f = 0
		}
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(f))
	case types.PhysDecimal:
		buf = binary.BigEndian.AppendUint64(buf, uint64(d.D.HighBits()))
		return binary.BigEndian.AppendUint64(buf, d.D.LowBits())
	case types.PhysString, types.PhysUUID: // uuid: its canonical text, as before it was stored as 16 bytes
		buf = binary.AppendUvarint(buf, uint64(len(d.S)))
		return append(buf, d.S...)
	case types.PhysInterval:
		buf = binary.BigEndian.AppendUint32(buf, uint32(d.IV.Months))
		buf = binary.BigEndian.AppendUint32(buf, uint32(d.IV.Days))
		return binary.BigEndian.AppendUint64(buf, uint64(d.IV.Nanoseconds))
	case types.PhysList: // text[]: the element count, then each element as a nullable string
		buf = binary.AppendUvarint(buf, uint64(len(d.A.Elems)))
		for i, s := range d.A.Elems {
			if d.A.IsNull(i) {
				buf = append(buf, 0)
				continue
			}
			buf = append(buf, 1)
			buf = binary.AppendUvarint(buf, uint64(len(s)))
			buf = append(buf, s...)
		}
		return buf
	case types.PhysStruct: // a record: its fields in order
		for k, f := range types.RecordFields(t) {
			buf = EncodeDatum(buf, d.R.Fields[k], f.T)
		}
		return buf
	}
	return buf
}

func DecodeDatum(buf []byte, t types.T) (types.Datum, []byte, error) {
	if len(buf) == 0 {
		return types.Null, nil, ErrCorruptState
	}
	if buf[0] == 0 {
		return types.Null, buf[1:], nil
	}
	if buf[0] == dsMarker && t.Physical() == types.PhysDecimal {
		if len(buf) < 18 {
			return types.Null, nil, ErrCorruptState
		}
		d := types.Datum{D: decimal128.New(int64(binary.BigEndian.Uint64(buf[1:])), binary.BigEndian.Uint64(buf[9:])), DS: int8(buf[17])}
		return d, buf[18:], nil
	}
	buf = buf[1:]
	var d types.Datum
	need := func(n int) bool { return len(buf) >= n }
	switch t.Physical() {
	case types.PhysBool, types.PhysInt64:
		if !need(8) {
			return d, nil, ErrCorruptState
		}
		d.I = int64(binary.BigEndian.Uint64(buf) ^ (1 << 63))
		return d, buf[8:], nil
	case types.PhysFloat64:
		if !need(8) {
			return d, nil, ErrCorruptState
		}
		d.F = math.Float64frombits(binary.BigEndian.Uint64(buf))
		return d, buf[8:], nil
	case types.PhysDecimal:
		if !need(16) {
			return d, nil, ErrCorruptState
		}
		d.D = decimal128.New(int64(binary.BigEndian.Uint64(buf)), binary.BigEndian.Uint64(buf[8:]))
		return d, buf[16:], nil
	case types.PhysString, types.PhysUUID:
		n, k := binary.Uvarint(buf)
		if k <= 0 || uint64(len(buf)-k) < n {
			return d, nil, ErrCorruptState
		}
		d.S = string(buf[k : k+int(n)])
		return d, buf[k+int(n):], nil
	case types.PhysInterval:
		if !need(16) {
			return d, nil, ErrCorruptState
		}
		d.IV = arrow.MonthDayNanoInterval{
			Months:      int32(binary.BigEndian.Uint32(buf)),
			Days:        int32(binary.BigEndian.Uint32(buf[4:])),
			Nanoseconds: int64(binary.BigEndian.Uint64(buf[8:])),
		}
		return d, buf[16:], nil
	case types.PhysList:
		n, k := binary.Uvarint(buf)
		if k <= 0 || uint64(len(buf)-k) < n {
			return d, nil, ErrCorruptState
		}
		buf = buf[k:]
		a := &types.Array{Elems: make([]string, n)}
		for i := range a.Elems {
			if len(buf) == 0 {
				return d, nil, ErrCorruptState
			}
			if buf[0] == 0 {
				if a.Null == nil {
					a.Null = make([]bool, n)
				}
				a.Null[i] = true
				buf = buf[1:]
				continue
			}
			m, k := binary.Uvarint(buf[1:])
			if k <= 0 || uint64(len(buf)-1-k) < m {
				return d, nil, ErrCorruptState
			}
			a.Elems[i] = string(buf[1+k : 1+k+int(m)])
			buf = buf[1+k+int(m):]
		}
		d.A = a
		return d, buf, nil
	case types.PhysStruct:
		fs := types.RecordFields(t)
		r := &types.RecordValue{Fields: make([]types.Datum, len(fs))}
		for k, f := range fs {
			var err error
			if r.Fields[k], buf, err = DecodeDatum(buf, f.T); err != nil {
				return d, nil, err
			}
		}
		d.R = r
		return d, buf, nil
	}
	return d, buf, nil
}

func AppendUvarint(buf []byte, v uint64) []byte { return binary.AppendUvarint(buf, v) }

func ReadUvarint(buf []byte) (uint64, []byte, error) {
	v, k := binary.Uvarint(buf)
	if k <= 0 {
		return 0, nil, ErrCorruptState
	}
	return v, buf[k:], nil
}

// CompareDatum orders non-NULL values of type t as PostgreSQL does
// (types.CompareDatum).
func CompareDatum(a, b types.Datum, t types.T) int { return types.CompareDatum(a, b, t) }

func Cmp3(less, greater bool) int { return types.Cmp3(less, greater) }

// TakeArray returns the rows idx of a (idx -1 gives NULL).
func TakeArray(a arrow.Array, idx []int, t types.T) arrow.Array {
	return TakeArrayMem(Mem, a, idx, t)
}

// TakeArrayMem is TakeArray allocating from mem.
func TakeArrayMem(mem memory.Allocator, a arrow.Array, idx []int, t types.T) arrow.Array {
	return TakeArrayInts(mem, mem, a, idx, t)
}

// TakeArrayInts is TakeArrayMem gathering a BIGINT-like column without
// NULLs from ints (which may be a recycler: TakeInt64s writes every byte).
func TakeArrayInts(mem, ints memory.Allocator, a arrow.Array, idx []int, t types.T) arrow.Array {
	if arr, ok := a.(*array.Int64); ok && arr.NullN() == 0 {
		if out := TakeInt64s(ints, arr, idx, t); out != nil {
			return out
		}
	}
	if n := a.Len(); n > 0 && a.NullN() == n {
		// A column of NULLs only (a window's columns nothing above it
		// reads, Hop.Used): NULLs in one append, not row by row.
		if _, dec := a.(*array.Decimal128); !dec {
			return NewNullArrayMem(mem, t, len(idx))
		}
	}
	var bl array.Builder
	if d, ok := a.(*array.Decimal128); ok && types.DScales(d) != nil {
		// A type recovered from the layout (TypeOfArrow) does not say the
		// column is unconstrained; its display-scale bytes do.
		bl = types.NewDecimalBuilder(mem, d.DataType().(*arrow.Decimal128Type))
	} else {
		bl = types.NewBuilder(mem, t)
	}
	defer bl.Release()
	AppendTake(bl, a, idx, t)
	return bl.NewArray()
}

// TakeInt64s gathers the rows idx of a BIGINT-like array without NULLs
// straight into a values buffer, with no validity bitmap; nil if idx asks
// for a NULL (a negative index).
func TakeInt64s(mem memory.Allocator, arr *array.Int64, idx []int, t types.T) arrow.Array {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(idx) * arrow.Int64SizeBytes)
	out := arrow.Int64Traits.CastFromBytes(buf.Bytes())
	vs := arr.Int64Values()
	for x, i := range idx {
		if i < 0 {
			buf.Release()
			return nil
		}
		out[x] = vs[i]
	}
	data := array.NewData(t.Arrow(), len(idx), []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	defer data.Release()
	return array.MakeFromData(data)
}

// TakeRecord returns the rows idx of rec as a new record of types ts.
func TakeRecord(rec arrow.RecordBatch, idx []int, ts []types.T) arrow.RecordBatch {
	return TakeRecordMem(Mem, rec, idx, ts)
}

// TakeRecordMem is TakeRecord allocating from mem.
func TakeRecordMem(mem memory.Allocator, rec arrow.RecordBatch, idx []int, ts []types.T) arrow.RecordBatch {
	cols := make([]arrow.Array, len(ts))
	for c := range ts {
		cols[c] = TakeArrayMem(mem, rec.Column(c), idx, ts[c])
	}
	return NewRecord(ts, cols, len(idx))
}

// NewRecord makes a record of the given columns, taking ownership of them.
func NewRecord(ts []types.T, cols []arrow.Array, n int) arrow.RecordBatch {
	rec := array.NewRecordBatch(SchemaFor(ts), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// SchemaFor returns an Arrow schema for columns of types ts, named c0, c1, ...
func SchemaFor(ts []types.T) *arrow.Schema {
	fs := make([]arrow.Field, len(ts))
	for i, t := range ts {
		fs[i] = arrow.Field{Name: ColName(i), Type: t.Arrow(), Nullable: true}
	}
	return arrow.NewSchema(fs, nil)
}

func ColName(i int) string { return "c" + strconv.Itoa(i) }

// NewNullArray returns n NULLs of type t.
func NewNullArray(t types.T, n int) arrow.Array { return NewNullArrayMem(Mem, t, n) }

// NewNullArrayMem is NewNullArray allocating from mem. A BIGINT-like,
// DOUBLE or text column (a window's bounds nothing reads, routed to an
// aggregate's instances batch by batch) allocates nothing
// (types.NullArray).
func NewNullArrayMem(mem memory.Allocator, t types.T, n int) arrow.Array {
	return types.NullArray(mem, t, n)
}

// ErrCorruptState is the error of state that does not decode.
var ErrCorruptState = sqlerr.New(sqlerr.DataCorrupted, "corrupt aggregate state")

// FloatLess orders floats as PostgreSQL does: NaN above everything.
func FloatLess(x, y float64) bool { return types.FloatLess(x, y) }

// EncodeRow appends row i of rec, each column EncodeDatum'd (the format of
// view rows and of operators' stored rows).
func EncodeRow(buf []byte, rec arrow.RecordBatch, i int, ts []types.T) []byte {
	for c, t := range ts {
		buf = EncodeValueDatum(buf, types.DatumAt(rec.Column(c), i, t), t)
	}
	return buf
}

// dsMarker starts a non-NULL unconstrained NUMERIC value that carries its
// display scale (types/dscale.go): the marker, the 16 bytes EncodeDatum
// writes, then the scale byte. Only values are written so (EncodeRow,
// EncodeValueDatum); keys never are, so 1.5 and 1.50 keep one key.
const dsMarker = 2

// EncodeValueDatum is EncodeDatum for a value that is not a key: an
// unconstrained NUMERIC keeps its display scale. DecodeDatum reads both.
func EncodeValueDatum(buf []byte, d types.Datum, t types.T) []byte {
	if d.DS == 0 || d.Null || t.Kind != types.Numeric || t.Prec != 0 {
		return EncodeDatum(buf, d, t)
	}
	buf = append(buf, dsMarker)
	buf = binary.BigEndian.AppendUint64(buf, uint64(d.D.HighBits()))
	buf = binary.BigEndian.AppendUint64(buf, d.D.LowBits())
	return append(buf, byte(d.DS))
}

// ReleaseAll releases the non-nil arrays of as.
func ReleaseAll(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// DecodeRow decodes a row encoded column by column with EncodeDatum.
func DecodeRow(enc string, ts []types.T) []types.Datum {
	buf := []byte(enc)
	out := make([]types.Datum, len(ts))
	for i, t := range ts {
		out[i], buf, _ = DecodeDatum(buf, t)
	}
	return out
}
