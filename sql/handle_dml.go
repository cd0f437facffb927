package sql

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Writes to tables with a primary key (changelog tables, exec/keyed.go):
// INSERT (with ON CONFLICT), UPDATE and DELETE. Each statement takes the
// table's write lock, brings the table's rows (kept in memory between
// writes, netted from the log at the first) up to the log's end, computes
// its changes (checking the key) and appends them as one durable block, so
// a statement is atomic and statements on one table are serial. The
// statement commits by itself, except inside a transaction block
// (keyedtx.go); in an implicit transaction (a multi-statement query, the extended
// protocol before Sync) the rows buffered before it are appended first.

// sessionDML runs the writes of keyed tables for a session.
type sessionDML struct{ s *Session }

// keyedLocks serialises the writes to each keyed table and keeps the
// table's rows between them.
type keyedLocks struct {
	mu     sync.Mutex
	tables map[uint64]*keyedState
}

// keyedState is a keyed table's write lock and, under it, its rows as of
// log offset off (rows nil: not loaded, or dropped after a failed write,
// which may have changed them).
type keyedState struct {
	mu   sync.Mutex
	rows *plan.KeyedRows
	off  uint64
	// holder is the transaction block holding mu (nil: none, or a
	// statement outside a block); guarded by keyedLocks.mu (keyedtx.go).
	holder *txn
}

// lock returns the table's state, locked.
func (l *keyedLocks) lock(table uint64) *keyedState {
	l.mu.Lock()
	st := l.stateLocked(table)
	l.mu.Unlock()
	st.mu.Lock()
	return st
}

// stateLocked returns table's state, adding it; l.mu is held.
func (l *keyedLocks) stateLocked(table uint64) *keyedState {
	if l.tables == nil {
		l.tables = map[uint64]*keyedState{}
	}
	st := l.tables[table]
	if st == nil {
		st = &keyedState{}
		l.tables[table] = st
	}
	return st
}

// forget drops a dropped table's rows (a writer holding its lock still
// finds the table gone).
func (l *keyedLocks) forget(table uint64) {
	l.mu.Lock()
	delete(l.tables, table)
	l.mu.Unlock()
}

// keyedTable makes t a changelog table keyed by the columns key (none:
// t stays an append-only stream).
func keyedTable(t *storage.TableDef, key []string) error {
	if len(key) == 0 {
		return nil
	}
	if t.Partitions > 1 {
		return sqlerr.New(sqlerr.FeatureNotSupported, "a table with a PRIMARY KEY has one partition (partitions = %d is not supported)", t.Partitions)
	}
	for _, k := range key {
		i := t.Column(k)
		if i < 0 {
			return sqlerr.New(sqlerr.UndefinedColumn, "column %q named in key does not exist", k)
		}
		t.Columns[i].NotNull = true
		t.KeyCols = append(t.KeyCols, i)
	}
	return nil
}

// noKey refuses UPDATE or DELETE on a table without a key.
func noKey(what string, t *storage.TableDef) error {
	return &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
		Msg:  fmt.Sprintf("%s is not supported on table %q: it has no PRIMARY KEY, so it is an append-only stream", what, t.Name),
		Hint: "Declare the table with a PRIMARY KEY (CREATE TABLE ... (id BIGINT PRIMARY KEY, ...)) to UPDATE and DELETE its rows."}
}

// keyedTx applies the transaction rules to a write of a keyed table.
func (d sessionDML) keyedTx(what string) error {
	s := d.s
	t := s.txn
	if t == nil {
		return nil
	}
	if t.explicit {
		if s.e.streamLog != nil {
			return sqlerr.New(sqlerr.FeatureNotSupported, "%s on a table with a PRIMARY KEY is not supported inside a transaction block in a cluster: each such statement commits by itself", what)
		}
		return nil // keyedWriteTx
	}
	return s.commitWrites()
}

// keyedRun runs a DML statement's plan over the live database (the
// table's write lock is held, so its rows are the latest) and returns its
// rows as one record of types ts.
// With k (the table's rows under its lock), the plan's scans of the table
// read them.
func (d sessionDML) keyedRun(ctx context.Context, node planner.Node, ectx *expr.Ctx, ts []types.T, k *plan.KeyedRows) (arrow.RecordBatch, error) {
	s := d.s
	phys, err := planner.Physical(node, s.e)
	if err != nil {
		return nil, err
	}
	if k != nil {
		plan.UseKeyedRows(phys, k)
	}
	budget := plan.NewBudget(s.workMem(), s.e.queryMem)
	defer budget.Close()
	ec := *ectx
	ec.Mem = budget.Allocator()
	var recs []arrow.RecordBatch
	// ConcatRecords copies the rows out of the budget's memory.
	err = batch.Run(&plan.Ctx{Context: ctx, DB: s.e.db, Expr: &ec, Mem: budget}, phys, func(r arrow.RecordBatch) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		for _, r := range recs {
			r.Release()
		}
		return nil, err
	}
	return plan.ConcatRecords(recs, ts)
}

// keyedWrite locks t, checks it is still the table, nets its log and
// appends the changes write computes.
func (d sessionDML) keyedWrite(ctx context.Context, t *storage.TableDef, ectx *expr.Ctx,
	write func(k *plan.KeyedRows) (*plan.Changes, error)) error {
	s := d.s
	if tx := s.txn; tx != nil && tx.explicit {
		return d.keyedWriteTx(ctx, tx, t, ectx, write)
	}
	st := s.e.keyed.lock(t.ID)
	defer st.mu.Unlock()
	rec, err := st.changes(ctx, s.e, t, ectx, write, nil)
	if rec == nil {
		return err
	}
	defer rec.Release()
	if err := s.e.appendRows(t, []arrow.RecordBatch{rec}); err != nil {
		st.rows = nil
		return err
	}
	// The rows now hold the statement's changes: they are at the log's end.
	_, end, _, err := s.e.db.Log().Bounds(t.ID, 0)
	if err != nil {
		st.rows = nil
		return err
	}
	st.off = end
	return nil
}

// changes checks that t is still a table that takes writes, brings st's
// rows (read from the log when dropped, then replay run over them) up to
// the log's end, and runs write over them: its change record, nil when
// nothing changed or on an error (after which the rows are dropped). The
// caller holds st's lock.
func (st *keyedState) changes(ctx context.Context, e *Engine, t *storage.TableDef, ectx *expr.Ctx,
	write func(k *plan.KeyedRows) (*plan.Changes, error), replay func(k *plan.KeyedRows)) (arrow.RecordBatch, error) {
	if cur, ok := e.Table(t.Name); !ok || cur.ID != t.ID {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", t.Name)
	}
	if isCDC(t) {
		return nil, sqlerr.New(sqlerr.WrongObjectType, "cannot change source %q: its rows come from upstream (its connector)", t.Name)
	}
	rebuild := st.rows == nil
	if rebuild {
		st.rows, st.off = plan.CachedKeyedRows(t), 0
	}
	// Only this lock's holders append to the log; catching up covers the
	// rows a failed append may still have made durable.
	off, err := st.rows.CatchUp(&plan.Ctx{Context: ctx, DB: e.db, Expr: ectx}, st.off)
	if err != nil {
		st.rows = nil
		return nil, err
	}
	st.off = off
	if rebuild && replay != nil {
		replay(st.rows)
	}
	ch, err := write(st.rows)
	if err != nil || ch.Len() == 0 {
		if err != nil {
			st.rows = nil
		}
		return nil, err
	}
	return st.rows.ChangesRecord(ch), nil
}

// execKeyedInsert runs an INSERT into a keyed table, or an INSERT with ON
// CONFLICT; ok is false for any other INSERT.
func (d sessionDML) execKeyedInsert(ctx context.Context, st *Stmt, b *bind.Binder, q *parse.Query, n *ast.InsertStmt, params []types.Datum) (res *Result, ok bool, err error) {
	s := d.s
	def, err := b.InsertTable(n)
	if err != nil {
		return nil, false, nil // BindInsert reports it
	}
	oc := q.OnConflict
	if !plan.Keyed(def) {
		if oc == nil {
			return nil, false, nil
		}
		return nil, true, sqlerr.New(sqlerr.InvalidColumnReference, "there is no unique or exclusion constraint matching the ON CONFLICT specification")
	}
	on := plan.ConflictError
	var cu *bind.ConflictUpdate
	if oc != nil {
		if oc.Cols != nil && !sameKey(def, oc.Cols) {
			return nil, true, sqlerr.New(sqlerr.InvalidColumnReference, "there is no unique or exclusion constraint matching the ON CONFLICT specification")
		}
		on = plan.ConflictNothing
		if oc.Update != nil {
			on = plan.ConflictUpdate
			if cu, err = b.BindConflictUpdate(def, oc.Update); err != nil {
				return nil, true, err
			}
		}
	}
	_, src, err := b.BindInsert(n)
	if err != nil {
		return nil, true, err
	}
	ret, err := bindReturning(b, st, q, def, "")
	if err != nil {
		return nil, true, err
	}
	defer ret.drop()
	if err := d.keyedTx("INSERT"); err != nil {
		return nil, true, err
	}
	ectx := s.exprCtx(params)
	ts := columnTypesOf(def)
	rows, err := d.keyedRun(ctx, src, ectx, ts, nil)
	if err != nil {
		return nil, true, err
	}
	defer rows.Release()
	if err := checkNotNull(def, rows, 0); err != nil {
		return nil, true, err
	}
	var count int64
	err = d.keyedWrite(ctx, def, ectx, func(k *plan.KeyedRows) (*plan.Changes, error) {
		ch, c, err := k.Insert(rows, on, func(pairs arrow.RecordBatch) (arrow.RecordBatch, []bool, error) {
			return conflictRows(ectx, cu, pairs, ts)
		})
		count = c
		if err == nil && ret != nil {
			w := k.Written(ch)
			defer w.Release()
			err = ret.add(ectx, w)
		}
		return ch, err
	})
	if err != nil {
		return nil, true, err
	}
	return ret.result(fmt.Sprintf("INSERT 0 %d", count)), true, nil
}

// conflictRows evaluates DO UPDATE over pairs (existing row, proposed row).
func conflictRows(ectx *expr.Ctx, cu *bind.ConflictUpdate, pairs arrow.RecordBatch, ts []types.T) (arrow.RecordBatch, []bool, error) {
	cols := make([]arrow.Array, 0, len(cu.Row))
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	for _, e := range cu.Row {
		a, err := expr.Eval(ectx, e, pairs)
		if err != nil {
			release()
			return nil, nil, err
		}
		cols = append(cols, a)
	}
	var keep []bool
	if cu.Where != nil {
		a, err := expr.Eval(ectx, cu.Where, pairs)
		if err != nil {
			release()
			return nil, nil, err
		}
		defer a.Release()
		bs, ok := a.(*array.Boolean)
		if !ok {
			release()
			return nil, nil, sqlerr.New(sqlerr.DatatypeMismatch, "argument of WHERE must be type boolean")
		}
		keep = make([]bool, bs.Len())
		for i := range keep {
			keep[i] = bs.IsValid(i) && bs.Value(i)
		}
	}
	return plan.RecordOf(ts, cols, int(pairs.NumRows())), keep, nil
}

// sameKey reports whether cols are exactly t's key columns.
func sameKey(t *storage.TableDef, cols []string) bool {
	if len(cols) != len(t.KeyCols) {
		return false
	}
	for _, c := range t.KeyCols {
		if !slices.Contains(cols, t.Columns[c].Name) {
			return false
		}
	}
	return true
}

func columnTypesOf(t *storage.TableDef) []types.T {
	ts := make([]types.T, len(t.Columns))
	for i, c := range t.Columns {
		ts[i] = c.Type
	}
	return ts
}

// execUpdate runs UPDATE on a keyed table.
func (d sessionDML) execUpdate(ctx context.Context, st *Stmt, b *bind.Binder, q *parse.Query, n *ast.UpdateStmt, params []types.Datum) (*Result, error) {
	s := d.s
	def, node, err := b.BindUpdate(n)
	if err != nil {
		return nil, err
	}
	if !plan.Keyed(def) {
		return nil, noKey("UPDATE", def)
	}
	ret, err := bindReturning(b, st, q, def, bind.DMLAlias(n.TableRefs))
	if err != nil {
		return nil, err
	}
	defer ret.drop()
	if err := d.keyedTx("UPDATE"); err != nil {
		return nil, err
	}
	ectx := s.exprCtx(params)
	ts := columnTypesOf(def)
	var count int64
	err = d.keyedWrite(ctx, def, ectx, func(k *plan.KeyedRows) (*plan.Changes, error) {
		rows, err := d.keyedRun(ctx, node, ectx, append(slices.Clone(ts), ts...), k)
		if err != nil {
			return nil, err
		}
		defer rows.Release()
		olds := plan.SliceColumns(rows, 0, ts)
		defer olds.Release()
		news := plan.SliceColumns(rows, len(ts), ts)
		defer news.Release()
		if err := checkNotNull(def, news, 0); err != nil {
			return nil, err
		}
		count = rows.NumRows()
		if err := ret.add(ectx, news); err != nil {
			return nil, err
		}
		return k.Update(olds, news)
	})
	if err != nil {
		return nil, err
	}
	return ret.result(fmt.Sprintf("UPDATE %d", count)), nil
}

// execDelete runs DELETE on a keyed table.
func (d sessionDML) execDelete(ctx context.Context, st *Stmt, b *bind.Binder, q *parse.Query, n *ast.DeleteStmt, params []types.Datum) (*Result, error) {
	s := d.s
	def, node, err := b.BindDelete(n)
	if err != nil {
		return nil, err
	}
	if !plan.Keyed(def) {
		return nil, noKey("DELETE", def)
	}
	ret, err := bindReturning(b, st, q, def, bind.DMLAlias(n.TableRefs))
	if err != nil {
		return nil, err
	}
	defer ret.drop()
	if err := d.keyedTx("DELETE"); err != nil {
		return nil, err
	}
	ectx := s.exprCtx(params)
	ts := columnTypesOf(def)
	var count int64
	err = d.keyedWrite(ctx, def, ectx, func(k *plan.KeyedRows) (*plan.Changes, error) {
		rows, err := d.keyedRun(ctx, node, ectx, ts, k)
		if err != nil {
			return nil, err
		}
		defer rows.Release()
		ch := k.Delete(rows)
		count = int64(ch.Len())
		return ch, ret.add(ectx, rows)
	})
	if err != nil {
		return nil, err
	}
	return ret.result(fmt.Sprintf("DELETE %d", count)), nil
}

// describeDML binds an UPDATE or DELETE to learn its parameters' types.
func describeDML(b *bind.Binder, n ast.StmtNode) error {
	var err error
	switch q := n.(type) {
	case *ast.UpdateStmt:
		_, _, err = b.BindUpdate(q)
	case *ast.DeleteStmt:
		_, _, err = b.BindDelete(q)
	}
	return err
}

// describeConflict binds an INSERT's ON CONFLICT DO UPDATE, for its
// parameters' types.
func describeConflict(b *bind.Binder, q *parse.Query, n *ast.InsertStmt) error {
	if q.OnConflict == nil || q.OnConflict.Update == nil {
		return nil
	}
	def, err := b.InsertTable(n)
	if err != nil {
		return err
	}
	_, err = b.BindConflictUpdate(def, q.OnConflict.Update)
	return err
}

// keyedCopy is COPY FROM into a table with a primary key: one INSERT of
// all the COPY's rows, so a key already in the table or twice in the data
// fails the whole COPY with 23505 (PostgreSQL's COPY has no ON CONFLICT).
type keyedCopy struct{ d sessionDML }

// write checks and appends the COPY's rows (recs, released here) and
// returns the command tag.
func (kc *keyedCopy) write(t *storage.TableDef, ts []types.T, recs []arrow.RecordBatch) (string, error) {
	rows, err := plan.ConcatRecords(recs, ts)
	if err != nil {
		return "", err
	}
	defer rows.Release()
	if err := checkNotNull(t, rows, 0); err != nil {
		return "", err
	}
	ctx := context.Background()
	ectx := kc.d.s.exprCtx(nil)
	var count int64
	err = kc.d.keyedWrite(ctx, t, ectx, func(k *plan.KeyedRows) (*plan.Changes, error) {
		ch, n, err := k.Insert(rows, plan.ConflictError, nil)
		count = n
		return ch, err
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("COPY %d", count), nil
}
