package types

import (
	"encoding/binary"
	"strconv"
)

// Integer arrays (int2[], int4[], int8[]) are text[] values whose elements
// are that integer type's text: T{Kind: TextArray, Prec: int32(Int16)} is
// int2[] (IntArray). A cast to one checks each element as the integer
// type's input does (22P02, 22003) and writes it as its output does; a
// subscript of one is of the element type. The catalog's int2vector
// columns (pg_index.indkey, pg_publication_rel.prattrs) are text[], which
// psql casts to int2[].

// IntArray is the array type of integer kind k.
func IntArray(k Kind) T { return T{Kind: TextArray, Prec: int32(k)} }

// ArrayElem is the element type of an array type: text, or an integer
// type for IntArray.
func ArrayElem(t T) T {
	if t.Kind == TextArray && t.Prec != 0 {
		return T{Kind: Kind(t.Prec)}
	}
	return TText
}

// checkArrayElems returns a with each element read as t's element type.
func checkArrayElems(a *Array, t T) (Datum, error) {
	elem := ArrayElem(t)
	if a == nil || elem.Kind == Text {
		return Datum{A: a}, nil
	}
	out := &Array{Elems: make([]string, len(a.Elems)), Null: a.Null}
	for i, s := range a.Elems {
		if a.IsNull(i) {
			continue
		}
		v, err := parseInt(s, elem)
		if err != nil {
			return Null, err
		}
		out.Elems[i] = strconv.FormatInt(v, 10)
	}
	return Datum{A: out}, nil
}

// appendIntArrayBinary writes array_send's layout of an integer array
// (elements checked by checkArrayElems, so they parse).
func appendIntArrayBinary(buf []byte, a *Array, t T) []byte {
	elem := ArrayElem(t)
	size := map[Kind]int{Int16: 2, Int32: 4, Int64: 8}[elem.Kind]
	hasNull := uint32(0)
	for i := range a.Elems {
		if a.IsNull(i) {
			hasNull = 1
		}
	}
	ndim := uint32(1)
	if len(a.Elems) == 0 {
		ndim, hasNull = 0, 0
	}
	buf = binary.BigEndian.AppendUint32(buf, ndim)
	buf = binary.BigEndian.AppendUint32(buf, hasNull)
	buf = binary.BigEndian.AppendUint32(buf, elem.OID())
	if ndim == 0 {
		return buf
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(a.Elems)))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	for i, s := range a.Elems {
		if a.IsNull(i) {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
			continue
		}
		v, _ := strconv.ParseInt(s, 10, 64)
		buf = binary.BigEndian.AppendUint32(buf, uint32(size))
		switch size {
		case 2:
			buf = binary.BigEndian.AppendUint16(buf, uint16(v))
		case 4:
			buf = binary.BigEndian.AppendUint32(buf, uint32(v))
		default:
			buf = binary.BigEndian.AppendUint64(buf, uint64(v))
		}
	}
	return buf
}
