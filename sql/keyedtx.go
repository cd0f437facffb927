package sql

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Writes to keyed tables inside a transaction block (BEGIN ... COMMIT).
// The block takes the table's write lock at its first INSERT, UPDATE,
// DELETE or COPY of it and keeps it until the block ends, as PostgreSQL
// keeps its row locks: another session's write of the table waits. Each
// statement computes its changes against the table's rows under the lock,
// which then hold them (so the block's later statements, and its duplicate
// key checks, see its own writes), and the changes are buffered as the
// block's rows for the table (txWrites, never staged). COMMIT appends them
// with the block's other writes in one synced write (storage.CommitAppends),
// so views read them once, at COMMIT. ROLLBACK, a failed block and a lost
// session drop the rows under the lock (the next writer reads them back
// from the log); ROLLBACK TO SAVEPOINT rebuilds them from the log and the
// changes kept. A block that waits for a lock held by a block that waits
// (directly or not) for one of its own gets 40P01, as in PostgreSQL.

// txKeyed is a keyed table a block has written: its write lock, held.
type txKeyed struct {
	t  *storage.TableDef
	l  *keyedLocks
	st *keyedState
	// ok: the rows under the lock are the log's (after a COMMIT).
	ok bool
}

// lockTx takes table's write lock for the block tx (it may hold it
// already), waiting while another writer holds it.
func (l *keyedLocks) lockTx(ctx context.Context, table uint64, tx *txn) (*keyedState, error) {
	wait := 50 * time.Microsecond
	for {
		l.mu.Lock()
		st := l.stateLocked(table)
		if st.holder == tx {
			l.mu.Unlock()
			return st, nil
		}
		if st.mu.TryLock() {
			st.holder, tx.waitFor = tx, nil
			l.mu.Unlock()
			return st, nil
		}
		for h := st.holder; h != nil; h = h.waitFor.holder {
			if h == tx {
				tx.waitFor = nil
				l.mu.Unlock()
				return nil, &sqlerr.Error{Code: sqlerr.DeadlockDetected, Msg: "deadlock detected",
					Detail: "The transaction waits for a table's write lock held by a transaction that waits for one of its own.",
					Hint:   "Write the tables in the same order in every transaction."}
			}
			if h.waitFor == nil {
				break
			}
		}
		tx.waitFor = st
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			l.mu.Lock()
			tx.waitFor = nil
			l.mu.Unlock()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Millisecond)
	}
}

// keyedWriteTx is keyedWrite inside a block: the changes write computes
// go to the block's buffered rows, not the log.
func (d sessionDML) keyedWriteTx(ctx context.Context, tx *txn, t *storage.TableDef, ectx *expr.Ctx,
	write func(k *plan.KeyedRows) (*plan.Changes, error)) error {
	s := d.s
	k := tx.keyedOf(t.ID)
	if k == nil {
		st, err := s.e.keyed.lockTx(ctx, t.ID, tx)
		if err != nil {
			return err
		}
		k = &txKeyed{t: t, l: &s.e.keyed, st: st}
		tx.keyed = append(tx.keyed, k)
	}
	// The block's changes so far (ROLLBACK TO SAVEPOINT kept them) go
	// over rows read back from the log.
	rec, err := k.st.changes(ctx, s.e, t, ectx, write, func(rows *plan.KeyedRows) {
		for _, w := range tx.writes {
			if w.t.ID == t.ID {
				for _, r := range w.recs {
					rows.Apply(r)
				}
			}
		}
	})
	if rec == nil {
		return err
	}
	defer rec.Release()
	if err := tx.addRecs(s.e.db, t, []arrow.RecordBatch{rec}); err != nil {
		k.st.rows = nil
		return err
	}
	return nil
}

// keyedOf returns the block's lock of table, or nil.
func (t *txn) keyedOf(table uint64) *txKeyed {
	for _, k := range t.keyed {
		if k.t.ID == table {
			return k
		}
	}
	return nil
}

// keyedCommitted records that the block's changes are in the logs: the
// rows under each lock are the log's up to its end.
func (t *txn) keyedCommitted(db *storage.DB) {
	for _, k := range t.keyed {
		if k.st.rows == nil {
			continue
		}
		if _, end, _, err := db.Log().Bounds(k.t.ID, 0); err == nil {
			k.st.off, k.ok = end, true
		}
	}
}

// keyedForget drops the rows under the block's locks (ROLLBACK TO
// SAVEPOINT: they are rebuilt at the next write).
func (t *txn) keyedForget() {
	for _, k := range t.keyed {
		k.st.rows = nil
	}
}

// keyedRelease ends the block's hold of its locks; rows not committed are
// dropped.
func (t *txn) keyedRelease() {
	for _, k := range t.keyed {
		if !k.ok {
			k.st.rows = nil
		}
		k.l.mu.Lock()
		k.st.holder = nil
		k.l.mu.Unlock()
		k.st.mu.Unlock()
	}
	t.keyed = nil
}
