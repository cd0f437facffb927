package accum

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// arrayAggAcc is array_agg(text): the group's values (NULLs kept) in input
// order, NULL for a group without rows. Arg may be the record ROW(x),
// NULL for a row the call's FILTER drops. A retracted row is refused: the
// element to remove is not known by position.
type arrayAggAcc struct {
	vals []*types.Array
}

func (a *arrayAggAcc) Grow(n int) {
	for len(a.vals) < n {
		a.vals = append(a.vals, nil)
	}
}

func (a *arrayAggAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	// ROW(x), NULL for a row FILTER (WHERE ...) drops: a window
	// function's (sql/bind windowcollect.go).
	keep, _ := arg.(*array.Struct)
	if keep != nil && keep.NumField() == 1 {
		arg = keep.Field(0)
	} else {
		keep = nil
	}
	s, ok := arg.(*array.String)
	if !ok {
		return sqlerr.New(sqlerr.FeatureNotSupported, "array_agg is supported only for text")
	}
	for i, g := range gids {
		if keep != nil && keep.IsNull(i) {
			continue
		}
		if sign(signs, i) < 0 {
			return sqlerr.New(sqlerr.FeatureNotSupported, "array_agg over an input that retracts rows is not supported")
		}
		v := a.vals[g]
		if v == nil {
			v = &types.Array{}
			a.vals[g] = v
		}
		if s.IsNull(i) {
			if v.Null == nil {
				v.Null = make([]bool, len(v.Elems), len(v.Elems)+1)
			}
			v.Elems = append(v.Elems, "")
			v.Null = append(v.Null, true)
			continue
		}
		v.Elems = append(v.Elems, s.Value(i))
		if v.Null != nil {
			v.Null = append(v.Null, false)
		}
	}
	return nil
}

func (a *arrayAggAcc) Result(gid int32) types.Datum {
	if a.vals[gid] == nil {
		return types.Null
	}
	return types.Datum{A: a.vals[gid]}
}

func (a *arrayAggAcc) Reset(gid int32) { a.vals[gid] = nil }

// encode writes the element count+1 (0: no rows), then per element a NULL
// flag byte and the length-prefixed text.
func (a *arrayAggAcc) Encode(buf []byte, gid int32) []byte {
	v := a.vals[gid]
	if v == nil {
		return binary.AppendUvarint(buf, 0)
	}
	buf = binary.AppendUvarint(buf, uint64(len(v.Elems))+1)
	for i, s := range v.Elems {
		if v.IsNull(i) {
			buf = append(buf, 1)
			continue
		}
		buf = append(buf, 0)
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	return buf
}

func (a *arrayAggAcc) Decode(buf []byte, gid int32) ([]byte, error) {
	bad := sqlerr.New(sqlerr.Internal, "corrupt array_agg state")
	n, k := binary.Uvarint(buf)
	if k <= 0 {
		return nil, bad
	}
	buf = buf[k:]
	if n == 0 {
		a.vals[gid] = nil
		return buf, nil
	}
	v := &types.Array{Elems: make([]string, n-1)}
	for i := range v.Elems {
		if len(buf) == 0 {
			return nil, bad
		}
		null := buf[0] == 1
		buf = buf[1:]
		if null {
			if v.Null == nil {
				v.Null = make([]bool, n-1)
			}
			v.Null[i] = true
			continue
		}
		l, k := binary.Uvarint(buf)
		if k <= 0 || uint64(len(buf)-k) < l {
			return nil, bad
		}
		v.Elems[i] = string(buf[k : k+int(l)])
		buf = buf[k+int(l):]
	}
	a.vals[gid] = v
	return buf, nil
}
