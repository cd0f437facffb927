package types

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Per-value display scale of unconstrained NUMERIC
// (docs/decisions/2026-12-07-numeric-per-value-scale.md).
//
// An unconstrained NUMERIC value is held exactly at its type's storage
// scale (T.Scale), as before, so comparison, hashing, keys and arithmetic
// see the value and 1.5 = 1.50 needs nothing. Its PostgreSQL display scale
// (dscale) travels beside it as one byte:
//
//   - in a Datum, field DS;
//   - in an Arrow Decimal128 array, an optional third buffer of one byte
//     per slot (after validity and values), which slicing keeps.
//
// The byte is dscale+1; 0 means "not known", and the value then prints
// with trailing zeros trimmed (the behaviour before per-value scales). A
// kernel that does not know about the byte therefore produces arrays that
// print as before, never wrong values. NUMERIC(p,s) values never carry the
// byte: their dscale is s.

// MaxDScale bounds a carried display scale (it fits the byte).
const MaxDScale = 120

// PackDScale encodes display scale s as the byte DS holds.
func PackDScale(s int32) int8 { return int8(min(max(s, 0), MaxDScale) + 1) }

// WithDScale returns d carrying display scale s.
func WithDScale(d Datum, s int32) Datum {
	d.DS = PackDScale(s)
	return d
}

// DScaleOf returns the display scale of non-NULL numeric datum d of type t:
// s for NUMERIC(p,s), the carried one for unconstrained NUMERIC, else the
// trimmed scale; 0 for integers.
func DScaleOf(d Datum, t T) int32 {
	switch {
	case t.Kind != Numeric:
		return 0
	case t.Prec > 0:
		return t.Scale
	case d.DS > 0:
		return int32(d.DS) - 1
	}
	return DisplayScale(d.D, t.Scale)
}

// DScales returns the per-slot display-scale bytes of arr (a Decimal128
// array) indexed like its values, or nil if arr carries none.
func DScales(arr arrow.Array) []int8 {
	d := arr.Data()
	bufs := d.Buffers()
	if len(bufs) < 3 || bufs[2] == nil || bufs[2].Len() == 0 {
		return nil
	}
	b := bufs[2].Bytes()
	if len(b) < d.Offset()+d.Len() {
		return nil
	}
	s := unsafe.Slice((*int8)(unsafe.Pointer(&b[0])), len(b))
	return s[d.Offset() : d.Offset()+d.Len()]
}

// DScaleAt is the display scale of non-NULL slot i of arr, a column of t
// whose display-scale bytes (DScales) are ds.
func DScaleAt(arr *array.Decimal128, ds []int8, i int, t T) int32 {
	if t.Prec > 0 || t.Kind != Numeric {
		return DScaleOf(Datum{}, t)
	}
	if ds != nil && ds[i] > 0 {
		return int32(ds[i]) - 1
	}
	return DisplayScale(arr.Value(i), t.Scale)
}

// NewDScaleBuf allocates a zeroed display-scale buffer of n slots; the
// caller passes it as the third buffer of a Decimal128 array's data.
func NewDScaleBuf(mem memory.Allocator, n int) (*memory.Buffer, []int8) {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(max(n, 1))
	b := buf.Bytes()
	clear(b)
	return buf, unsafe.Slice((*int8)(unsafe.Pointer(&b[0])), n)
}

// AttachDScales returns a new array with arr's validity and values and ds
// as its display-scale bytes (len(ds) == arr.Len()); arr is not released.
func AttachDScales(arr arrow.Array, ds []int8) arrow.Array {
	d := arr.Data()
	bufs := d.Buffers()
	var bs []byte
	if len(ds) > 0 {
		bs = unsafe.Slice((*byte)(unsafe.Pointer(&ds[0])), len(ds))
	}
	// The display-scale buffer is indexed like the values, from d.Offset().
	full := make([]byte, d.Offset()+len(ds))
	copy(full[d.Offset():], bs)
	nd := array.NewData(d.DataType(), d.Len(), []*memory.Buffer{bufs[0], bufs[1], memory.NewBufferBytes(full)}, nil, d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd)
}

// DecimalBuilder builds an unconstrained NUMERIC column whose values carry
// their display scales (NewBuilder returns one for such a type).
type DecimalBuilder struct {
	*array.Decimal128Builder
	ds  []int8
	any bool
}

// AppendDS appends v with display-scale byte ds (0: not known).
func (b *DecimalBuilder) AppendDS(v decimal128.Num, ds int8) {
	b.Decimal128Builder.Append(v)
	b.ds = append(b.ds, ds)
	b.any = b.any || ds != 0
}

// Append appends v without a known display scale.
func (b *DecimalBuilder) Append(v decimal128.Num) { b.AppendDS(v, 0) }

// AppendNull appends a NULL.
func (b *DecimalBuilder) AppendNull() {
	b.Decimal128Builder.AppendNull()
	b.ds = append(b.ds, 0)
}

// AppendNulls appends n NULLs.
func (b *DecimalBuilder) AppendNulls(n int) {
	for i := 0; i < n; i++ {
		b.AppendNull()
	}
}

// AppendEmptyValue appends a zero.
func (b *DecimalBuilder) AppendEmptyValue() { b.Append(decimal128.Num{}) }

// NewArray returns the built column, carrying the display scales if any
// value had one, and resets the builder.
func (b *DecimalBuilder) NewArray() arrow.Array {
	arr := b.Decimal128Builder.NewArray()
	ds, any := b.ds, b.any
	b.ds, b.any = nil, false
	if !any || len(ds) != arr.Len() {
		return arr
	}
	defer arr.Release()
	return AttachDScales(arr, ds)
}

// NewDecimal128Array is NewArray (the embedded builder's method would drop
// the display scales).
func (b *DecimalBuilder) NewDecimal128Array() *array.Decimal128 {
	return b.NewArray().(*array.Decimal128)
}

// TextDScale is the display scale PostgreSQL's numeric input gives the text
// s ("1.50" → 2, "1.5e1" → 0, "2e-3" → 3); ok is false if s does not look
// like a plain number (parsing then reports the error).
func TextDScale(s string) (int32, bool) {
	i, n := 0, len(s)
	for i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	for n > i && (s[n-1] == ' ' || s[n-1] == '\t' || s[n-1] == '\n' || s[n-1] == '\r') {
		n--
	}
	if i < n && (s[i] == '+' || s[i] == '-') {
		i++
	}
	frac, digits, dot := 0, 0, false
	for ; i < n; i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
			if dot {
				frac++
			}
			continue
		case c == '.' && !dot:
			dot = true
			continue
		}
		break
	}
	if digits == 0 {
		return 0, false
	}
	exp := 0
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < n && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		if i == n {
			return 0, false
		}
		for ; i < n; i++ {
			if s[i] < '0' || s[i] > '9' || exp > 10000 {
				return 0, false
			}
			exp = exp*10 + int(s[i]-'0')
		}
		if neg {
			exp = -exp
		}
	}
	if i != n {
		return 0, false
	}
	return int32(max(frac-exp, 0)), true
}

// Concatenate is array.Concatenate keeping the display scales of decimal
// parts (array.Concatenate drops the third buffer).
func Concatenate(parts []arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	out, err := array.Concatenate(parts, mem)
	if err != nil {
		return nil, err
	}
	if l, ok := out.(*array.List); ok {
		return concatListDScales(l, parts), nil
	}
	if _, ok := out.(*array.Decimal128); !ok {
		return out, nil
	}
	var ds []int8
	for k, p := range parts {
		pd := DScales(p)
		if pd == nil && ds == nil {
			continue
		}
		if ds == nil {
			ds = make([]int8, 0, out.Len())
			for _, q := range parts[:k] {
				ds = append(ds, make([]int8, q.Len())...)
			}
		}
		if pd == nil {
			pd = make([]int8, p.Len())
		}
		ds = append(ds, pd...)
	}
	if ds == nil {
		return out, nil
	}
	defer out.Release()
	return AttachDScales(out, ds), nil
}

// Arrays of unconstrained NUMERIC (numeric[]) are a List<Decimal128> whose
// values carry their display scales as a scalar column does: the list's
// values array has the third buffer (ListDScales). NewBuilder returns a
// NumericListBuilder for such a type.

// ListAppender appends array rows: an *array.ListBuilder, or a
// *NumericListBuilder.
type ListAppender interface {
	array.Builder
	Append(bool)
	ValueBuilder() array.Builder
}

// NumericListBuilder builds a numeric[] column whose elements keep their
// display scales: ValueBuilder is a *DecimalBuilder.
type NumericListBuilder struct {
	*array.ListBuilder
	vals *DecimalBuilder
}

// NewNumericListBuilder returns a builder of arrays of t (numeric[]).
func NewNumericListBuilder(mem memory.Allocator, t T) *NumericListBuilder {
	lb := array.NewBuilder(mem, t.Arrow()).(*array.ListBuilder)
	return &NumericListBuilder{ListBuilder: lb, vals: &DecimalBuilder{Decimal128Builder: lb.ValueBuilder().(*array.Decimal128Builder)}}
}

// ValueBuilder is the elements' builder, which keeps display scales.
func (b *NumericListBuilder) ValueBuilder() array.Builder { return b.vals }

// NewArray returns the built column (its values carrying their display
// scales) and resets the builder.
func (b *NumericListBuilder) NewArray() arrow.Array { return b.NewListArray() }

// NewListArray is NewArray.
func (b *NumericListBuilder) NewListArray() *array.List {
	ds, any := b.vals.ds, b.vals.any
	b.vals.ds, b.vals.any = nil, false
	l := b.ListBuilder.NewListArray()
	if !any || len(ds) != l.ListValues().Len() {
		return l
	}
	defer l.Release()
	return AttachListDScales(l, ds)
}

// ListDScales returns the display-scale bytes of l's values (indexed like
// l.ListValues()), or nil.
func ListDScales(l *array.List) []int8 {
	if _, ok := l.ListValues().(*array.Decimal128); !ok {
		return nil
	}
	return DScales(l.ListValues())
}

// AttachListDScales returns a new list with l's rows whose values carry
// ds (len(ds) == l.ListValues().Len()); l is not released.
func AttachListDScales(l *array.List, ds []int8) *array.List {
	child := AttachDScales(l.ListValues(), ds)
	defer child.Release()
	d := l.Data()
	nd := array.NewData(d.DataType(), d.Len(), d.Buffers(), []arrow.ArrayData{child.Data()}, d.NullN(), d.Offset())
	defer nd.Release()
	return array.NewListData(nd)
}

// concatListDScales gives out, the concatenation of lists parts, the
// display scales of the parts' values (taking over out).
func concatListDScales(out *array.List, parts []arrow.Array) arrow.Array {
	any := false
	for _, p := range parts {
		if l, ok := p.(*array.List); ok && ListDScales(l) != nil {
			any = true
		}
	}
	if !any {
		return out
	}
	ds := make([]int8, 0, out.ListValues().Len())
	for _, p := range parts {
		l := p.(*array.List)
		if l.Len() == 0 {
			continue
		}
		lo, _ := l.ValueOffsets(0)
		_, hi := l.ValueOffsets(l.Len() - 1)
		if pd := ListDScales(l); pd != nil {
			ds = append(ds, pd[lo:hi]...)
		} else {
			ds = append(ds, make([]int8, hi-lo)...)
		}
	}
	if len(ds) != out.ListValues().Len() {
		return out
	}
	defer out.Release()
	return AttachListDScales(out, ds)
}
