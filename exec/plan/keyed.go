package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Keyed tables (changelog tables) are streams declared with a PRIMARY KEY.
// Their log blocks hold the table's columns and then an op column, as a
// view's changelog does: INSERT appends inserts, DELETE deletes carrying
// the old rows, UPDATE update_before/update_after pairs (or, when a key
// changes, the deletes of the old rows before the inserts of the new). So
// the table's rows at an offset are its log up to there netted by key: for
// each key, the last insert or update_after not followed by a delete or
// update_before. Jobs read the log from its start as a changelog (their
// sources retract); batch reads net it (scanKeyed); the statements that
// write it net it under the table's write lock to check the key
// (KeyedRows) and append their changes as one durable block.

// Keyed reports whether t is a changelog table.
func Keyed(t *storage.TableDef) bool {
	return t != nil && t.Kind == storage.KindStream && len(t.KeyCols) > 0
}

// KeyedRows is a keyed table's rows: its log netted by key.
type KeyedRows struct {
	t    *storage.TableDef
	ts   []types.T
	ectx *expr.Ctx
	rows map[string]string // key encoding → the row's encoding (rowEncoder)
	// own makes k copy the strings it keeps: a KeyedRows kept across
	// statements would otherwise pin every batch buffer a live row
	// shares (rowEncoder.rowString).
	own  bool
	renc opkit.RowEncoder
	kenc opkit.RowEncoder
}

// NewKeyedRows returns the empty rows of t.
func NewKeyedRows(ectx *expr.Ctx, t *storage.TableDef) *KeyedRows {
	return &KeyedRows{t: t, ts: ColumnTypes(t), ectx: ectx, rows: map[string]string{}}
}

// Len is the number of rows.
func (k *KeyedRows) Len() int { return len(k.rows) }

// CachedKeyedRows returns the rows of t to keep across statements (they
// own their memory), at log offset 0: CatchUp fills them.
func CachedKeyedRows(t *storage.TableDef) *KeyedRows {
	k := NewKeyedRows(nil, t)
	k.own = true
	return k
}

// CatchUp nets t's log from offset from (k holds the rows below it) to
// the live end, which it returns. The caller holds the table's write lock,
// so nothing is appended meanwhile.
func (k *KeyedRows) CatchUp(ctx *Ctx, from uint64) (uint64, error) {
	start, end, _, err := ctx.DB.Log().Bounds(k.t.ID, 0)
	if err != nil {
		return 0, err
	}
	if from < start {
		from = start
	}
	if from >= end {
		return end, nil
	}
	err = ctx.DB.Log().Read(opkit.Mem, k.t.ID, 0, from, end, OldLayoutRead(k.t, func(_ uint64, rec arrow.RecordBatch) error {
		defer rec.Release()
		k.Apply(rec)
		return nil
	}))
	return end, err
}

// readLog applies t's log up to the end snap sees (nil: the live end).
func (k *KeyedRows) readLog(ctx *Ctx, snap storage.Reader) error {
	t := k.t
	for part := 0; part < max(1, t.Partitions); part++ {
		start, end, err := ReadRange(ctx, t, part, snap)
		if err != nil {
			return err
		}
		if err := ctx.DB.Log().ReadAt(snap, opkit.Mem, t.ID, uint32(part), start, end, OldLayoutRead(t, func(_ uint64, rec arrow.RecordBatch) error {
			defer rec.Release()
			if err := ctx.Check(); err != nil {
				return err
			}
			k.Apply(rec)
			return nil
		})); err != nil {
			return err
		}
	}
	return nil
}

// ScanKeyed is a batch read of a keyed table: its netted rows.
func ScanKeyed(ctx *Ctx, t *storage.TableDef, snap storage.Reader, emit func(arrow.RecordBatch) error) error {
	k := NewKeyedRows(ctx.Expr, t)
	if err := k.readLog(ctx, snap); err != nil {
		return err
	}
	if k.Len() == 0 {
		return nil
	}
	return emit(k.Record(ctx.Alloc()))
}

// keys returns the key encoding of each row of cols (the table's columns).
func (k *KeyedRows) Keys(cols []arrow.Array, n int) []string {
	kc := make([]arrow.Array, len(k.t.KeyCols))
	kt := make([]types.T, len(kc))
	for i, c := range k.t.KeyCols {
		cols[c].Retain()
		kc[i], kt[i] = cols[c], k.ts[c]
	}
	accum.CanonKeysT(k.ectx, kc, kt)
	k.kenc.EncodeKeys(kc, kt, n)
	out := make([]string, n)
	for i := range out {
		out[i] = k.kenc.RowString(i)
	}
	for _, a := range kc {
		a.Release()
	}
	return out
}

func (k *KeyedRows) cols(rec arrow.RecordBatch) []arrow.Array { return LeadCols(rec, len(k.ts)) }

// put sets key's row.
func (k *KeyedRows) put(key, row string) {
	if k.own {
		key, row = strings.Clone(key), strings.Clone(row)
	}
	k.rows[key] = row
}

// Apply nets a log block (the table's columns, then the op) into k.
func (k *KeyedRows) Apply(rec arrow.RecordBatch) {
	n := int(rec.NumRows())
	cols := k.cols(rec)
	keys := k.Keys(cols, n)
	k.renc.Encode(cols, k.ts, n)
	ops := rec.Column(len(k.ts)).(*array.Int64).Int64Values()
	for i, key := range keys {
		if connector.Op(ops[i]).Sign() > 0 {
			k.put(key, k.renc.RowString(i))
		} else {
			delete(k.rows, key)
		}
	}
}

// Record returns the rows, in key-encoding order.
func (k *KeyedRows) Record(mem memory.Allocator) arrow.RecordBatch {
	keys := make([]string, 0, len(k.rows))
	for key := range k.rows {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	encs := make([]string, len(keys))
	for i, key := range keys {
		encs[i] = k.rows[key]
	}
	return decodeRows(mem, k.ts, encs)
}

// decodeRows builds a record of types ts from encoded rows.
func decodeRows(mem memory.Allocator, ts []types.T, encs []string) arrow.RecordBatch {
	bls := make([]array.Builder, len(ts))
	for i, t := range ts {
		bls[i] = types.NewBuilder(mem, t)
	}
	d := opkit.NewRowDecoder(ts, bls)
	for _, e := range encs {
		d.AppendRow(e)
	}
	cols := make([]arrow.Array, len(ts))
	for i, b := range bls {
		cols[i] = b.NewArray()
		b.Release()
	}
	return opkit.NewRecord(ts, cols, len(encs))
}

// Conflict is what an INSERT does with a row whose key exists.
type Conflict uint8

const (
	ConflictError   Conflict = iota // 23505
	ConflictNothing                 // ON CONFLICT DO NOTHING: skip the row
	ConflictUpdate                  // ON CONFLICT DO UPDATE: the update function's row
)

// ConflictUpdateFunc computes DO UPDATE's new rows: pairs holds, per
// conflicting row, the existing row's columns then the proposed row's
// (EXCLUDED). It returns the new rows (the table's columns) and which of
// them to update (nil: all; DO UPDATE ... WHERE); it owns neither.
type ConflictUpdateFunc func(pairs arrow.RecordBatch) (arrow.RecordBatch, []bool, error)

// Changes collects a statement's log rows.
type Changes struct {
	encs []string
	ops  []connector.Op
}

func (c *Changes) add(enc string, op connector.Op) {
	c.encs = append(c.encs, enc)
	c.ops = append(c.ops, op)
}

// Len is the number of log rows.
func (c *Changes) Len() int { return len(c.encs) }

// ChangesRecord returns c as a log block of k's table.
func (k *KeyedRows) ChangesRecord(c *Changes) arrow.RecordBatch {
	rec := decodeRows(opkit.Mem, k.ts, c.encs)
	defer rec.Release()
	ob := array.NewInt64Builder(opkit.Mem)
	defer ob.Release()
	for _, op := range c.ops {
		ob.Append(int64(op))
	}
	cols := make([]arrow.Array, 0, len(k.ts)+1)
	for i := range k.ts {
		col := rec.Column(i)
		col.Retain()
		cols = append(cols, col)
	}
	cols = append(cols, ob.NewArray())
	return opkit.NewRecord(append(slices.Clone(k.ts), types.TInt64), cols, c.Len())
}

// Written returns the rows c leaves in the table (its inserts and the
// new images of its updates), in c's order: what RETURNING reports for an
// INSERT, with or without ON CONFLICT DO UPDATE.
func (k *KeyedRows) Written(c *Changes) arrow.RecordBatch {
	var encs []string
	for i, op := range c.ops {
		if op == connector.OpInsert || op == connector.OpUpdateAfter {
			encs = append(encs, c.encs[i])
		}
	}
	return decodeRows(opkit.Mem, k.ts, encs)
}

// duplicate is PostgreSQL's 23505 for row i of cols.
func (k *KeyedRows) duplicate(cols []arrow.Array, i int) error {
	names := make([]string, len(k.t.KeyCols))
	vals := make([]string, len(k.t.KeyCols))
	for j, c := range k.t.KeyCols {
		names[j] = k.t.Columns[c].Name
		vals[j] = types.TextOf(types.DatumAt(cols[c], i, k.ts[c]), k.ts[c])
	}
	return &sqlerr.Error{Code: sqlerr.UniqueViolation,
		Msg:    fmt.Sprintf("duplicate key value violates unique constraint %q", k.t.Name+"_pkey"),
		Detail: fmt.Sprintf("Key (%s)=(%s) already exists.", strings.Join(names, ", "), strings.Join(vals, ", "))}
}

// Insert nets an INSERT's rows (the table's columns) into k and returns
// its log rows and the count of rows inserted or updated.
func (k *KeyedRows) Insert(rec arrow.RecordBatch, on Conflict, update ConflictUpdateFunc) (*Changes, int64, error) {
	n := int(rec.NumRows())
	cols := k.cols(rec)
	keys := k.Keys(cols, n)
	var renc opkit.RowEncoder
	renc.Encode(cols, k.ts, n)
	ch := &Changes{}
	touched := map[string]bool{}
	// Each proposed row is an insert, skipped, or a conflict to update
	// (pair >= 0).
	pair := make([]int, n)
	inserted := make([]bool, n)
	var existing []string // per pair: the existing row
	var proposed []int    // per pair: the proposed row
	var count int64
	for i, key := range keys {
		pair[i] = -1
		old, ok := k.rows[key]
		if !ok {
			enc := renc.RowString(i)
			k.put(key, enc)
			touched[key] = true
			inserted[i] = true
			ch.add(enc, connector.OpInsert)
			count++
			continue
		}
		switch on {
		case ConflictError:
			return nil, 0, k.duplicate(cols, i)
		case ConflictNothing:
			continue
		}
		if touched[key] {
			return nil, 0, &sqlerr.Error{Code: sqlerr.CardinalityViolation,
				Msg:  "ON CONFLICT DO UPDATE command cannot affect row a second time",
				Hint: "Ensure that no rows proposed for insertion within the same command have duplicate constrained values."}
		}
		touched[key] = true
		pair[i] = len(existing)
		existing = append(existing, old)
		proposed = append(proposed, i)
	}
	if len(existing) == 0 {
		return ch, count, nil
	}
	// The pairs are evaluated as one batch; the changes are then written
	// in the statement's row order.
	olds := decodeRows(opkit.Mem, k.ts, existing)
	defer olds.Release()
	props := opkit.TakeRecordMem(opkit.Mem, rec, proposed, k.ts)
	defer props.Release()
	pcols := make([]arrow.Array, 0, 2*len(k.ts))
	for _, r := range []arrow.RecordBatch{olds, props} {
		for c := range k.ts {
			col := r.Column(c)
			col.Retain()
			pcols = append(pcols, col)
		}
	}
	pairs := opkit.NewRecord(append(slices.Clone(k.ts), k.ts...), pcols, len(existing))
	defer pairs.Release()
	news, keep, err := update(pairs)
	if err != nil {
		return nil, 0, err
	}
	defer news.Release()
	ncols := k.cols(news)
	nkeys := k.Keys(ncols, len(existing))
	var nenc opkit.RowEncoder
	nenc.Encode(ncols, k.ts, len(existing))
	out := &Changes{}
	for i := range keys {
		p := pair[i]
		if p < 0 {
			if inserted[i] {
				out.add(renc.RowString(i), connector.OpInsert)
			}
			continue
		}
		if keep != nil && !keep[p] {
			continue
		}
		if nkeys[p] != keys[i] {
			return nil, 0, sqlerr.New(sqlerr.FeatureNotSupported, "ON CONFLICT DO UPDATE cannot change the primary key")
		}
		out.add(existing[p], connector.OpUpdateBefore)
		enc := nenc.RowString(p)
		out.add(enc, connector.OpUpdateAfter)
		k.put(keys[i], enc)
		count++
	}
	return out, count, nil
}

// Update nets an UPDATE into k: olds are the rows it changes, news their
// new values (both the table's columns, row i of one becoming row i of the
// other). Keys are checked at the end of the statement: a new key may
// take one that another changed row gives up.
func (k *KeyedRows) Update(olds, news arrow.RecordBatch) (*Changes, error) {
	n := int(olds.NumRows())
	ocols, ncols := k.cols(olds), k.cols(news)
	okeys, nkeys := k.Keys(ocols, n), k.Keys(ncols, n)
	var oenc, nenc opkit.RowEncoder
	oenc.Encode(ocols, k.ts, n)
	nenc.Encode(ncols, k.ts, n)
	same := true
	for i := range okeys {
		if okeys[i] != nkeys[i] {
			same = false
		}
		delete(k.rows, okeys[i])
	}
	ch := &Changes{}
	for i, key := range nkeys {
		if _, ok := k.rows[key]; ok {
			return nil, k.duplicate(ncols, i)
		}
		k.put(key, nenc.RowString(i))
	}
	if same {
		for i := range okeys {
			ch.add(oenc.RowString(i), connector.OpUpdateBefore)
			ch.add(nenc.RowString(i), connector.OpUpdateAfter)
		}
		return ch, nil
	}
	// A key changes: the old rows all go before the new ones come, so
	// that netting the log never deletes a row the statement just wrote.
	for i := range okeys {
		ch.add(oenc.RowString(i), connector.OpDelete)
	}
	for i := range nkeys {
		ch.add(nenc.RowString(i), connector.OpInsert)
	}
	return ch, nil
}

// Delete nets a DELETE of olds (rows of the table) into k.
func (k *KeyedRows) Delete(olds arrow.RecordBatch) *Changes {
	n := int(olds.NumRows())
	cols := k.cols(olds)
	keys := k.Keys(cols, n)
	var enc opkit.RowEncoder
	enc.Encode(cols, k.ts, n)
	ch := &Changes{}
	for i, key := range keys {
		if _, ok := k.rows[key]; !ok {
			continue
		}
		delete(k.rows, key)
		ch.add(enc.RowString(i), connector.OpDelete)
	}
	return ch
}

// ConcatRecords concatenates recs, of types ts, into one record (empty if
// none); it releases recs.
func ConcatRecords(recs []arrow.RecordBatch, ts []types.T) (arrow.RecordBatch, error) {
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	cols := make([]arrow.Array, len(ts))
	n := 0
	for _, r := range recs {
		n += int(r.NumRows())
	}
	for c, t := range ts {
		if len(recs) == 0 {
			b := types.NewBuilder(opkit.Mem, t)
			cols[c] = b.NewArray()
			b.Release()
			continue
		}
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := types.Concatenate(parts, opkit.Mem)
		if err != nil {
			for _, done := range cols[:c] {
				done.Release()
			}
			return nil, sqlerr.Wrap(sqlerr.Internal, err)
		}
		cols[c] = a
	}
	return opkit.NewRecord(ts, cols, n), nil
}

// SliceColumns returns columns [from, from+len(ts)) of rec as a record.
func SliceColumns(rec arrow.RecordBatch, from int, ts []types.T) arrow.RecordBatch {
	cols := make([]arrow.Array, len(ts))
	for i := range ts {
		cols[i] = rec.Column(from + i)
		cols[i].Retain()
	}
	return opkit.NewRecord(ts, cols, int(rec.NumRows()))
}

// Types are the table's column types.
func (k *KeyedRows) Types() []types.T { return k.ts }

// RecordOf makes a record of the given columns, of types ts, taking
// ownership of them.
func RecordOf(ts []types.T, cols []arrow.Array, n int) arrow.RecordBatch {
	return opkit.NewRecord(ts, cols, n)
}

// NewKeyedRowsFrom returns a copy of k, for a statement that may fail.
func NewKeyedRowsFrom(k *KeyedRows) *KeyedRows {
	c := NewKeyedRows(k.ectx, k.t)
	for key, row := range k.rows {
		c.rows[key] = row
	}
	return c
}

// UseKeyedRows makes p's scans of k's table read k (the rows of a write
// that holds the table's lock) instead of netting its log.
func UseKeyedRows(p Plan, k *KeyedRows) {
	for _, s := range streamScans(p) {
		if s.Table.ID == k.t.ID {
			s.Rows = k
		}
	}
}

// LeadCols returns the first n columns of rec (a table's, before a
// changelog's op).
func LeadCols(rec arrow.RecordBatch, n int) []arrow.Array {
	cols := make([]arrow.Array, n)
	for i := range cols {
		cols[i] = rec.Column(i)
	}
	return cols
}

// SplitOps separates a changelog block's trailing op column.
func SplitOps(rec arrow.RecordBatch) (arrow.RecordBatch, []connector.Op) {
	nc := int(rec.NumCols()) - 1
	opsCol := rec.Column(nc).(*array.Int64).Int64Values()
	ops := make([]connector.Op, len(opsCol))
	for i, v := range opsCol {
		ops[i] = connector.Op(v)
	}
	cols := make([]arrow.Array, nc)
	ts := make([]types.T, nc)
	for i := 0; i < nc; i++ {
		cols[i] = rec.Column(i)
		cols[i].Retain()
		ts[i] = opkit.TypeOfArrow(cols[i])
	}
	out := opkit.NewRecord(ts, cols, int(rec.NumRows()))
	rec.Release()
	return out, ops
}
