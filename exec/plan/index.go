package plan

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Secondary indexes of materialized views (storage/index.go holds their
// layout). The view's sink writes a view row's index entries in the same
// run of the same epoch batch as the row, so an entry exists exactly when
// its row does, at every committed epoch. An index key is the row's index
// columns each in an order-preserving encoding, so that a range of values
// of the first columns is a range of keys:
//
//	NULL                0x00 (sorts first; lookups never match it)
//	integers, dates,    0x01, then the value as a big-endian uint64 with
//	times, timestamps   its sign bit flipped
//	float               0x01, then IEEE bits: sign flipped if positive,
//	                    all flipped if negative; -0 as 0, every NaN as one
//	                    NaN above +Inf (PostgreSQL's order)
//	numeric             0x01, then the 128-bit integer at the column's
//	                    scale, sign flipped
//	text, uuid, bytea   0x01, then the bytes with 0x00 written 0x00 0xff,
//	                    ended by 0x00 0x01 (so a prefix sorts first)
//	bool                0x01, then 0 or 1

// IndexableType reports whether a column of type t can be an index column.
func IndexableType(t types.T) bool {
	switch t.Kind {
	case types.Bool, types.Int16, types.Int32, types.Int64, types.Date, types.Time, types.TimeTZ, types.Timestamp,
		types.Float32, types.Float64, types.Numeric, types.Text, types.UUID, types.Bytea:
		return true
	}
	return false
}

// AppendIndexDatum appends d's order-preserving encoding (t indexable).
func AppendIndexDatum(buf []byte, d types.Datum, t types.T) []byte {
	if d.Null {
		return append(buf, 0)
	}
	buf = append(buf, 1)
	switch t.Kind {
	case types.Bool:
		return append(buf, byte(d.I&1))
	case types.Float32, types.Float64:
		f := d.F
		switch {
		case math.IsNaN(f):
			return binary.BigEndian.AppendUint64(buf, math.MaxUint64)
		case f == 0:
			f = 0
		}
		u := math.Float64bits(f)
		if u>>63 == 0 {
			u |= 1 << 63
		} else {
			u = ^u
		}
		return binary.BigEndian.AppendUint64(buf, u)
	case types.Numeric:
		buf = binary.BigEndian.AppendUint64(buf, uint64(d.D.HighBits())^1<<63)
		return binary.BigEndian.AppendUint64(buf, d.D.LowBits())
	case types.Text, types.UUID, types.Bytea:
		s := d.S
		for {
			i := strings.IndexByte(s, 0)
			if i < 0 {
				break
			}
			buf = append(buf, s[:i]...)
			buf = append(buf, 0, 0xff)
			s = s[i+1:]
		}
		buf = append(buf, s...)
		return append(buf, 0, 1)
	}
	return binary.BigEndian.AppendUint64(buf, uint64(d.I)^1<<63)
}

// IndexWriter maintains a view's indexes from the rows its sink writes.
type IndexWriter struct {
	view    *storage.TableDef
	ts      []types.T
	key     []byte
	scratch []types.Datum
}

func NewIndexWriter(view *storage.TableDef) *IndexWriter {
	if view == nil || len(view.Indexes) == 0 {
		return nil
	}
	return &IndexWriter{view: view, ts: ColumnTypes(view)}
}

// entryKey returns index ix's key of the row in cols at r, then rowKey.
func (w *IndexWriter) entryKey(ix *storage.IndexDef, cols []arrow.Array, r int, rowKey []byte) []byte {
	w.key = w.key[:0]
	for _, c := range ix.Cols {
		w.key = AppendIndexDatum(w.key, types.DatumAt(cols[c], r, w.ts[c]), w.ts[c])
	}
	return append(w.key, rowKey...)
}

// IndexSink takes index writes: a storage.Run, or a storage.Batch's
// single writes.
type IndexSink interface {
	PutIndexEntry(view, index uint64, key, row []byte)
	DeleteIndexEntry(view, index uint64, key []byte)
}

// put writes the entries of the row in cols at r, stored under rowKey with value val.
func (w *IndexWriter) Put(run IndexSink, cols []arrow.Array, r int, rowKey, val []byte) {
	for i := range w.view.Indexes {
		ix := &w.view.Indexes[i]
		run.PutIndexEntry(w.view.ID, ix.ID, w.entryKey(ix, cols, r, rowKey), val)
	}
}

// del removes the entries of the row in cols at r, stored under rowKey.
func (w *IndexWriter) Del(run IndexSink, cols []arrow.Array, r int, rowKey []byte) {
	for i := range w.view.Indexes {
		ix := &w.view.Indexes[i]
		run.DeleteIndexEntry(w.view.ID, ix.ID, w.entryKey(ix, cols, r, rowKey))
	}
}

// BuildIndex adds to b the entries of index ix of view for every row that
// view src has in db: its own rows in the live database once its job has
// stopped (the rows of its last committed epoch), or a snapshot's rows
// of the view it restores.
func BuildIndex(db *storage.DB, src uint64, b *storage.WriteBatch, view *storage.TableDef, ix *storage.IndexDef) error {
	ts := ColumnTypes(view)
	ds := make([]types.Datum, len(ts))
	var key []byte
	return db.Views().Scan(nil, src, func(k, row []byte) error {
		body := row
		for c, t := range ts {
			d, rest, err := opkit.DecodeDatum(body, t)
			if err != nil {
				return err
			}
			ds[c], body = d, rest
		}
		key = key[:0]
		for _, c := range ix.Cols {
			key = AppendIndexDatum(key, ds[c], ts[c])
		}
		key = append(key, k...)
		return storage.PutIndexEntry(b, view.ID, ix.ID, key, row)
	})
}

// IndexLookup narrows a view scan to the rows of one index whose first
// len(Eq) columns equal Eq's values (each a list: IN) and whose next
// column, if Lo or Hi is set, lies between them. The values are constant
// expressions (literals, parameters) evaluated when the scan runs. The
// plan keeps the whole predicate above the scan: the lookup only skips
// rows that cannot match it.
type IndexLookup struct {
	Index  *storage.IndexDef
	Eq     [][]expr.Expr
	Lo, Hi expr.Expr // nil: unbounded
	LoIncl bool
	HiIncl bool
	Desc   string // the conditions it uses, for EXPLAIN
}

// maxIndexPoints bounds the point lookups one scan makes (the product of
// its IN lists): more is refused (54000) rather than planned.
const maxIndexPoints = 1 << 16

type keyRange struct{ Lo, Hi []byte }

// hi nil: no upper bound

// Ranges evaluates the lookup's values into key ranges, sorted and
// without overlap; a NULL value matches nothing.
func (l *IndexLookup) Ranges(ctx *expr.Ctx, ts []types.T) ([]keyRange, error) {
	prefixes := [][]byte{nil}
	for i, list := range l.Eq {
		t := ts[l.Index.Cols[i]]
		var next [][]byte
		for _, e := range list {
			d, err := expr.EvalConst(ctx, e)
			if err != nil {
				return nil, err
			}
			if d.Null {
				continue
			}
			for _, p := range prefixes {
				next = append(next, AppendIndexDatum(slices.Clip(p), d, t))
			}
		}
		if len(next) > maxIndexPoints {
			return nil, sqlerr.New(sqlerr.ProgramLimitExceeded, "an index lookup of more than %d values", maxIndexPoints)
		}
		prefixes = next
	}
	slices.SortFunc(prefixes, bytes.Compare)
	prefixes = slices.CompactFunc(prefixes, bytes.Equal)
	var lo, hi []byte
	if len(l.Eq) < len(l.Index.Cols) && (l.Lo != nil || l.Hi != nil) {
		t := ts[l.Index.Cols[len(l.Eq)]]
		bound := func(e expr.Expr, incl, upper bool) ([]byte, bool, error) {
			d, err := expr.EvalConst(ctx, e)
			if err != nil || d.Null {
				return nil, false, err
			}
			k := AppendIndexDatum(nil, d, t)
			if incl == upper { // (> v): after every key starting v; (<= v): likewise
				k = prefixEnd(k)
			}
			return k, true, nil
		}
		lo = []byte{1} // above NULL: a comparison never matches it
		if l.Lo != nil {
			k, ok, err := bound(l.Lo, l.LoIncl, false)
			if err != nil || !ok {
				return nil, err
			}
			lo = k
		}
		hi = []byte{2}
		if l.Hi != nil {
			k, ok, err := bound(l.Hi, l.HiIncl, true)
			if err != nil || !ok {
				return nil, err
			}
			hi = k
		}
		if bytes.Compare(lo, hi) >= 0 {
			return nil, nil
		}
	}
	out := make([]keyRange, 0, len(prefixes))
	for _, p := range prefixes {
		if lo == nil {
			out = append(out, keyRange{Lo: p, Hi: prefixEnd(p)})
			continue
		}
		out = append(out, keyRange{Lo: append(slices.Clip(p), lo...), Hi: append(slices.Clip(p), hi...)})
	}
	return out, nil
}

// prefixEnd is the least key above every key that starts with p (nil if none).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
