package batch

import (
	"encoding/binary"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Indexes of tables (CREATE INDEX on a stream, keyed or append-only;
// decision record docs/decisions/2026-12-07-table-indexes.md). A table's
// rows are its log, which every write path (INSERT, COPY, UPDATE, DELETE,
// ON CONFLICT, transactions, connectors) appends to; an index is derived
// from the log by catch-ups that index the rows between the index's mark
// and the log's end and move the mark in the same batch
// (storage/index.go). A lookup first catches the index up, then reads it
// through the statement's snapshot and adds the log's rows past the mark
// that snapshot holds, so it sees exactly the rows a scan would. Entries:
//
//	keyed table    <index key><primary key encoding>  → the row
//	append-only    <index key><partition:4><offset:8> → the row
//
// A keyed table's log is a changelog whose deletes and update_befores
// carry the old row, so a row's old entry is found from the log alone. An
// append-only table's retention drops old blocks: entries below the log's
// start are skipped when read.

// catchUpRows is the rows one catch-up batch indexes before it commits
// (with the mark): a large build commits as it goes.
const catchUpRows = 64 << 10

var tableIndexLocks sync.Map

// index id → *sync.Mutex

func tableIndexLock(id uint64) *sync.Mutex {
	m, _ := tableIndexLocks.LoadOrStore(id, new(sync.Mutex))
	return m.(*sync.Mutex)
}

// LockTableIndex stops catch-ups of index id until the returned function
// is called (DROP INDEX and DROP TABLE remove its entries meanwhile).
func LockTableIndex(id uint64) func() {
	m := tableIndexLock(id)
	m.Lock()
	return m.Unlock
}

// tableIndexer computes index entries from log blocks.
type tableIndexer struct {
	t     *storage.TableDef
	ix    *storage.IndexDef
	ts    []types.T
	keyed *plan.KeyedRows // key encodings, for a keyed table
	renc  opkit.RowEncoder
	key   []byte
}

func newTableIndexer(t *storage.TableDef, ix *storage.IndexDef) *tableIndexer {
	w := &tableIndexer{t: t, ix: ix, ts: plan.ColumnTypes(t)}
	if plan.Keyed(t) {
		// Canonical key encodings whatever the statement's settings: the
		// entries' keys outlive it.
		w.keyed = plan.NewKeyedRows(nil, t)
	}
	return w
}

func (w *tableIndexer) cols(rec arrow.RecordBatch) []arrow.Array {
	return plan.LeadCols(rec, len(w.ts))
}

// indexKey returns the index key of row r of cols.
func (w *tableIndexer) indexKey(cols []arrow.Array, r int) []byte {
	w.key = w.key[:0]
	for _, c := range w.ix.Cols {
		w.key = plan.AppendIndexDatum(w.key, types.DatumAt(cols[c], r, w.ts[c]), w.ts[c])
	}
	return w.key
}

// apply adds to b the entry changes of rec, the rows of partition part
// from offset first.
func (w *tableIndexer) apply(b *storage.WriteBatch, part uint32, first uint64, rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	cols := w.cols(rec)
	w.renc.Encode(cols, w.ts, n)
	if w.keyed == nil {
		for r := 0; r < n; r++ {
			k := binary.BigEndian.AppendUint32(w.indexKey(cols, r), part)
			k = binary.BigEndian.AppendUint64(k, first+uint64(r))
			if err := storage.PutIndexEntry(b, w.t.ID, w.ix.ID, k, w.renc.Row(r)); err != nil {
				return err
			}
		}
		return nil
	}
	keys := w.keyed.Keys(cols, n)
	ops := rec.Column(len(w.ts)).(*array.Int64).Int64Values()
	for r, pk := range keys {
		k := append(w.indexKey(cols, r), pk...)
		var err error
		if connector.Op(ops[r]).Sign() > 0 {
			err = storage.PutIndexEntry(b, w.t.ID, w.ix.ID, k, w.renc.Row(r))
		} else {
			err = storage.DeleteIndexEntry(b, w.t.ID, w.ix.ID, k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// CatchUpTableIndex indexes the rows of table t's log from index ix's
// mark to the log's live end, or to upTo's offset of each partition if
// lower, committing entries and mark together every catchUpRows rows.
// CREATE INDEX builds an index with it; a lookup calls it first, up to
// where its snapshot reads the table (a table that views read is read at
// their committed cut), so the rows it adds from the log stay few and
// the next lookup's snapshot does not hold a mark past its own cut.
func CatchUpTableIndex(ctx *plan.Ctx, t *storage.TableDef, ix *storage.IndexDef, upTo []uint64) error {
	defer LockTableIndex(ix.ID)()
	db := ctx.DB
	mark, err := db.Views().IndexMark(nil, t.ID, ix.ID)
	if err != nil {
		return err
	}
	parts := max(1, t.Partitions)
	if len(mark) < parts {
		mark = append(mark, make([]uint64, parts-len(mark))...)
	}
	w := newTableIndexer(t, ix)
	b := db.NewBatch()
	defer func() { b.Close() }()
	rows, dirty := 0, false
	commit := func() error {
		storage.PutIndexMark(b, t.ID, ix.ID, mark)
		err := db.Commit(b, false)
		b.Close()
		b, rows, dirty = db.NewBatch(), 0, false
		return err
	}
	for part := 0; part < parts; part++ {
		start, end, _, err := db.Log().Bounds(t.ID, uint32(part))
		if err != nil {
			return err
		}
		if mark[part] < start { // retention dropped rows never indexed
			mark[part], dirty = start, true
		}
		if part < len(upTo) {
			end = min(end, upTo[part])
		}
		from := mark[part]
		err = db.Log().ReadAt(nil, opkit.Mem, t.ID, uint32(part), from, end, plan.OldLayoutRead(t, func(first uint64, rec arrow.RecordBatch) error {
			defer rec.Release()
			if err := ctx.Canceled(); err != nil {
				return err
			}
			if err := w.apply(b, uint32(part), first, rec); err != nil {
				return err
			}
			mark[part], dirty = first+uint64(rec.NumRows()), true
			if rows += int(rec.NumRows()); rows >= catchUpRows {
				return commit()
			}
			return nil
		}))
		if err != nil {
			return err
		}
		// Every row below end has been read, whatever blocks held none.
		if from < end && mark[part] < end {
			mark[part], dirty = end, true
		}
	}
	if dirty {
		return commit()
	}
	return nil
}

// skipIndexKey returns what follows the index key that starts k (the
// entry's row identity), or false if k is malformed.
func skipIndexKey(k []byte, ix *storage.IndexDef, ts []types.T) ([]byte, bool) {
	for _, c := range ix.Cols {
		if len(k) == 0 {
			return nil, false
		}
		if k[0] == 0 {
			k = k[1:]
			continue
		}
		k = k[1:]
		w := 8
		switch ts[c].Kind {
		case types.Bool:
			w = 1
		case types.Numeric:
			w = 16
		case types.Text, types.UUID, types.Bytea:
			w = -1
			for i := 0; i+1 < len(k); i++ {
				if k[i] == 0 {
					if k[i+1] == 1 {
						w = i + 2
						break
					}
					i++ // 0x00 0xff: an escaped zero byte
				}
			}
		}
		if w < 0 || len(k) < w {
			return nil, false
		}
		k = k[w:]
	}
	return k, true
}

// scanTableIndex is a ScanStream with an index lookup: the rows of the
// lookup's key ranges that the index holds at the statement's snapshot,
// less (keyed) the rows the log changes past the snapshot's mark, plus
// the log's rows past it. The filter above the scan decides which of the
// log's rows match.
func scanTableIndex(ctx *plan.Ctx, p *plan.ScanStream, emit func(arrow.RecordBatch) error) error {
	t, l := p.Table, p.Index
	snap := p.Snap
	if snap == nil {
		snap = ctx.Snap
	}
	parts := max(1, t.Partitions)
	starts, ends := make([]uint64, parts), make([]uint64, parts)
	for part := range parts {
		var err error
		if starts[part], ends[part], err = plan.ReadRange(ctx, t, part, snap); err != nil {
			return err
		}
		// A snapshot holds no more of the log than there is now: so an
		// index caught up to here reads no log at all (a log read seeks,
		// and decodes, the block before its start).
		_, live, _, err := ctx.DB.Log().Bounds(t.ID, uint32(part))
		if err != nil {
			return err
		}
		ends[part] = min(ends[part], live)
	}
	if err := CatchUpTableIndex(ctx, t, l.Index, ends); err != nil {
		return err
	}
	mark, err := ctx.DB.Views().IndexMark(snap, t.ID, l.Index.ID)
	if err != nil {
		return err
	}
	for part := range parts {
		if part >= len(mark) || mark[part] > ends[part] {
			// The snapshot reads the table at an older cut than its
			// index holds (or before the index's first catch-up): scan.
			return scanStream(ctx, &plan.ScanStream{Table: t, Snap: p.Snap}, emit)
		}
	}
	ts := plan.ColumnTypes(t)
	out := newIndexRows(ctx, ts, emit)
	defer out.release()
	w := newTableIndexer(t, l.Index)
	var touched map[string]bool
	var tail map[string]string
	if w.keyed != nil {
		// The rows the log changes past the mark, netted by key.
		touched, tail = map[string]bool{}, map[string]string{}
		err := ctx.DB.Log().ReadAt(snap, opkit.Mem, t.ID, 0, mark[0], ends[0], plan.OldLayoutRead(t, func(_ uint64, rec arrow.RecordBatch) error {
			defer rec.Release()
			n := int(rec.NumRows())
			cols := w.cols(rec)
			keys := w.keyed.Keys(cols, n)
			w.renc.Encode(cols, ts, n)
			ops := rec.Column(len(ts)).(*array.Int64).Int64Values()
			for r, k := range keys {
				touched[k] = true
				if connector.Op(ops[r]).Sign() > 0 {
					tail[k] = w.renc.RowString(r)
				} else {
					delete(tail, k)
				}
			}
			return ctx.Check()
		}))
		if err != nil {
			return err
		}
	}
	rs, err := l.Ranges(ctx.Expr, ts)
	if err != nil {
		return err
	}
	visit := func(key, row []byte) error {
		id, ok := skipIndexKey(key, l.Index, ts)
		if !ok {
			return nil
		}
		if touched != nil {
			if touched[string(id)] {
				return nil
			}
		} else {
			if len(id) != 12 {
				return nil
			}
			part, off := binary.BigEndian.Uint32(id), binary.BigEndian.Uint64(id[4:])
			if int(part) >= parts || off < starts[part] || off >= ends[part] {
				return nil
			}
		}
		return out.add(opkit.BytesView(row))
	}
	for _, kr := range rs {
		if err := ctx.DB.Views().ScanIndex(snap, t.ID, l.Index.ID, kr.Lo, kr.Hi, visit); err != nil {
			return err
		}
	}
	for _, row := range tail {
		if err := out.add(row); err != nil {
			return err
		}
	}
	if err := out.flush(); err != nil {
		return err
	}
	if touched != nil {
		return nil
	}
	for part := range parts {
		err := ctx.DB.Log().ReadAt(snap, ctx.Alloc(), t.ID, uint32(part), max(mark[part], starts[part]), ends[part], plan.OldLayoutRead(t, func(_ uint64, rec arrow.RecordBatch) error {
			if err := ctx.Check(); err != nil {
				rec.Release()
				return err
			}
			return emit(rec)
		}))
		if err != nil {
			return err
		}
	}
	return nil
}

// indexRows builds the batches of encoded rows an index lookup finds.
type indexRows struct {
	ctx  *plan.Ctx
	ts   []types.T
	bls  []array.Builder
	dec  *opkit.RowDecoder
	n    int
	emit func(arrow.RecordBatch) error
}

func newIndexRows(ctx *plan.Ctx, ts []types.T, emit func(arrow.RecordBatch) error) *indexRows {
	o := &indexRows{ctx: ctx, ts: ts, bls: make([]array.Builder, len(ts)), emit: emit}
	for i, t := range ts {
		o.bls[i] = types.NewBuilder(ctx.Alloc(), t)
	}
	o.dec = opkit.NewRowDecoder(ts, o.bls)
	return o
}

func (o *indexRows) add(row string) error {
	o.dec.AppendRow(row)
	if o.n++; o.n >= 16<<10 {
		if err := o.ctx.Check(); err != nil {
			return err
		}
		return o.flush()
	}
	return nil
}

func (o *indexRows) flush() error {
	if o.n == 0 {
		return nil
	}
	cols := make([]arrow.Array, len(o.bls))
	for i, b := range o.bls {
		cols[i] = b.NewArray()
	}
	rec := opkit.NewRecord(o.ts, cols, o.n)
	o.n = 0
	return o.emit(rec)
}

func (o *indexRows) release() {
	for _, b := range o.bls {
		b.Release()
	}
}
