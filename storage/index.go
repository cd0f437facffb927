package storage

import (
	"context"
	"encoding/binary"

	"github.com/cockroachdb/pebble/v2"
	"github.com/streamdb/streamdb/sqlerr"
)

// A secondary index of a materialized view (CREATE INDEX) is kept beside
// the view's rows, written in the same epoch batch as they are, so a
// snapshot holds the index and the rows at one committed epoch. An entry's
// key is i/<view id><index id><index key><row key>, where the index key
// is the row's index columns in an order-preserving encoding (exec) and
// the row key is the view row's own key; its value is the view row's value
// (a covering index, as RisingWave's default). Entries of a view live and
// die with its rows: dropping, restoring or copying a view's data covers
// them (DeleteTable, DeleteJobData, State.CopyJob).

// IndexDef is a secondary index of a view: its name, a catalog id, and the
// indexed columns (indexes into the view's Columns), in key order.
type IndexDef struct {
	Name string
	ID   uint64
	Cols []int
}

func indexPrefix(view, index uint64) []byte {
	k := make([]byte, 0, 18)
	k = append(k, "i/"...)
	k = binary.BigEndian.AppendUint64(k, view)
	return binary.BigEndian.AppendUint64(k, index)
}

func appendIndexKey(k []byte, view, index uint64, key []byte) []byte {
	k = append(k, "i/"...)
	k = binary.BigEndian.AppendUint64(k, view)
	k = binary.BigEndian.AppendUint64(k, index)
	return append(k, key...)
}

// PutIndexEntry stores an index entry (key: index key then row key).
func (r *Run) PutIndexEntry(view, index uint64, key, row []byte) {
	r.key = appendIndexKey(r.key[:0], view, index, key)
	r.note(r.key)
	r.b.Set(r.key, row, nil)
}

// DeleteIndexEntry removes an index entry.
func (r *Run) DeleteIndexEntry(view, index uint64, key []byte) {
	r.key = appendIndexKey(r.key[:0], view, index, key)
	r.note(r.key)
	r.b.Delete(r.key, nil)
}

// PutIndexEntry adds an index entry to a catalog batch (CREATE INDEX's build).
func PutIndexEntry(b *pebble.Batch, view, index uint64, key, row []byte) error {
	return b.Set(appendIndexKey(nil, view, index, key), row, nil)
}

// DeleteIndex adds the removal of every entry of an index to b.
func DeleteIndex(b *pebble.Batch, view, index uint64) {
	start := indexPrefix(view, index)
	b.DeleteRange(start, prefixEnd(start), nil)
}

// ScanIndex calls fn with the entries of an index whose keys (index key
// then row key) are in [lo, hi) as seen by r (nil: live); a nil hi is the
// index's end.
func (vs Views) ScanIndex(r Reader, view, index uint64, lo, hi []byte, fn func(key, row []byte) error) error {
	if r == nil {
		r = vs.db.pdb
	}
	prefix := indexPrefix(view, index)
	lower := append(append([]byte(nil), prefix...), lo...)
	upper := prefixEnd(prefix)
	if hi != nil {
		upper = append(append([]byte(nil), prefix...), hi...)
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if len(it.Key()) == len(prefix) {
			continue // a table index's mark
		}
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		if err := fn(it.Key()[len(prefix):], v); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}

// PutIndexEntry stores an index entry as a single write of the epoch
// batch: single writes to one key keep their order whatever their runs.
func (b *Batch) PutIndexEntry(view, index uint64, key, row []byte) {
	b.mu.Lock()
	b.b.Set(appendIndexKey(nil, view, index, key), row, nil)
	b.mu.Unlock()
}

// DeleteIndexEntry removes an index entry as a single write.
func (b *Batch) DeleteIndexEntry(view, index uint64, key []byte) {
	b.mu.Lock()
	b.b.Delete(appendIndexKey(nil, view, index, key), nil)
	b.mu.Unlock()
}

// An index of a table (a stream, keyed or not) is derived from the
// table's log rather than written with it: its mark records, per
// partition, the log offset below which every row is in the index, and
// each catch-up (exec/tableindex.go) indexes the rows from the mark to the
// log's end and moves the mark in the same batch as their entries. So the
// entries and the mark always agree, in the live database and in every
// snapshot, whatever crash interrupts a catch-up; a reader adds the log's
// rows past the mark its snapshot holds. The mark's key is inside
// the range DeleteIndex and DeleteTable remove.
//
// The mark's key is the index's prefix itself, before every entry (not
// after them: the key after an index's range may be a log block, whose
// large value would share the mark's data block and be decompressed by
// every read of the mark).
func indexMarkKey(table, index uint64) []byte { return indexPrefix(table, index) }

// IndexMark returns a table index's mark through r (nil: live): the
// offset of each partition below which the index holds the rows (nil: a
// new index, none).
func (vs Views) IndexMark(r Reader, table, index uint64) ([]uint64, error) {
	if r == nil {
		r = vs.db.pdb
	}
	v, closer, err := r.Get(indexMarkKey(table, index))
	if err == pebble.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	defer closer.Close()
	if len(v)%8 != 0 {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "index %d of table %d: a mark of %d bytes", index, table, len(v))
	}
	out := make([]uint64, len(v)/8)
	for i := range out {
		out[i] = binary.BigEndian.Uint64(v[8*i:])
	}
	return out, nil
}

// PutIndexMark adds the write of a table index's mark to b.
func PutIndexMark(b *pebble.Batch, table, index uint64, offs []uint64) {
	v := make([]byte, 0, 8*len(offs))
	for _, o := range offs {
		v = binary.BigEndian.AppendUint64(v, o)
	}
	_ = b.Set(indexMarkKey(table, index), v, nil)
}

// DeleteIndexEntry adds the removal of an index entry to a batch.
func DeleteIndexEntry(b *pebble.Batch, table, index uint64, key []byte) error {
	return b.Delete(appendIndexKey(nil, table, index, key), nil)
}

// CompactIndex compacts an index's key range after a bulk build: the
// build's batches each span the whole range (rows come in log order, not
// key order), so until compactions merge them a lookup seeks every one of
// their tables.
func (vs Views) CompactIndex(table, index uint64) error {
	start := indexPrefix(table, index)
	if err := vs.db.pdb.Compact(context.Background(), start, prefixEnd(start), true); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}
