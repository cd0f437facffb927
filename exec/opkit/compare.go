package opkit

import (
	"bytes"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/types"
)

// Comparator returns a typed three-way comparison of rows of a, with
// PostgreSQL's NULL placement (NULLs compare above everything unless nullsFirst).
func Comparator(a arrow.Array, t types.T, desc, nullsFirst bool) func(i, j int) int {
	var base func(i, j int) int
	switch arr := a.(type) {
	case *array.Int64:
		vs := arr.Int64Values()
		base = func(i, j int) int { return Cmp3(vs[i] < vs[j], vs[i] > vs[j]) }
	case *array.Float64:
		vs := arr.Float64Values()
		base = func(i, j int) int { return Cmp3(FloatLess(vs[i], vs[j]), FloatLess(vs[j], vs[i])) }
	case *array.String:
		if t.Kind == types.JSONB {
			base = func(i, j int) int { return types.JSONBCompare(arr.Value(i), arr.Value(j)) }
			break
		}
		base = func(i, j int) int { return strings.Compare(arr.Value(i), arr.Value(j)) }
	case *array.FixedSizeBinary: // uuid: memcmp, as PostgreSQL's uuid_cmp
		base = func(i, j int) int { return bytes.Compare(arr.Value(i), arr.Value(j)) }
	case *array.Boolean:
		base = func(i, j int) int {
			x, y := arr.Value(i), arr.Value(j)
			return Cmp3(!x && y, x && !y)
		}
	default:
		base = func(i, j int) int { return CompareDatum(types.DatumAt(a, i, t), types.DatumAt(a, j, t), t) }
	}
	hasNulls := a.NullN() > 0
	return func(i, j int) int {
		if hasNulls {
			ni, nj := a.IsNull(i), a.IsNull(j)
			if ni || nj {
				switch {
				case ni && nj:
					return 0
				case ni == nullsFirst: // i is a NULL placed first, or j is a NULL placed last
					return -1
				}
				return 1
			}
		}
		r := base(i, j)
		if desc {
			return -r
		}
		return r
	}
}

// Stopper polls a query's cancellation from inside a loop that cannot
// return an error (a sort's comparison): every stopEvery calls it asks
// Canceled, and once that fails it stays stopped.
type Stopper struct {
	Canceled func() error
	n        int
	done     bool
}

const stopEvery = 4096

// Stopped says whether the query is canceled (polled every stopEvery calls).
func (s *Stopper) Stopped() bool {
	if s.done {
		return true
	}
	s.n++
	if s.n < stopEvery {
		return false
	}
	s.n = 0
	s.done = s.Canceled() != nil
	return s.done
}
