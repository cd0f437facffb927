package sql

import (
	"slices"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
)

// Savepoints of a transaction block (SAVEPOINT, ROLLBACK TO SAVEPOINT,
// RELEASE SAVEPOINT), as in PostgreSQL. A block's writes are buffers of
// rows per stream (txWrites), so a savepoint is a mark in each: how many
// in-memory batches and stages the stream had. ROLLBACK TO drops what came
// after the marks, restores the session settings of the SAVEPOINT, closes
// the cursors declared since, and clears a failed block; the savepoint
// stays, later ones are destroyed. RELEASE destroys the savepoint and the
// later ones and keeps the writes. While a failed block has savepoints,
// its writes are kept (ROLLBACK TO may return to them); COMMIT of a failed
// block still rolls back everything.
type txSavepoint struct {
	name  string
	marks []txMark // per t.writes entry at SAVEPOINT
	vars  map[string]string
	// cursors is len(t.cursors) at SAVEPOINT.
	cursors int
}

// txMark is a position in one stream's buffered writes.
type txMark struct{ recs, stages int }

// txSavepointStmt runs a savepoint statement; beforeStatement has checked
// that it is inside a block.
func (s sessionTxBlock) txSavepointStmt(n *parse.TxSavepoint) (*Result, error) {
	t := s.txn
	if t == nil || !t.explicit {
		what := map[parse.TxSavepointOp]string{parse.TxSavepointSet: "SAVEPOINT",
			parse.TxSavepointRelease: "RELEASE SAVEPOINT", parse.TxSavepointRollback: "ROLLBACK TO SAVEPOINT"}[n.Op]
		return nil, sqlerr.New(sqlerr.NoActiveSQLTransaction, "%s can only be used in transaction blocks", what)
	}
	if t.failed && n.Op != parse.TxSavepointRollback {
		return nil, errInFailedTxn()
	}
	res := &Result{Tag: n.Tag()}
	if n.Op == parse.TxSavepointSet {
		sp := txSavepoint{name: n.Name, marks: make([]txMark, len(t.writes)), cursors: len(t.cursors)}
		for i, w := range t.writes {
			sp.marks[i] = txMark{recs: len(w.recs), stages: len(w.stages)}
		}
		sp.vars = copyVars(s.vars)
		t.savepoints = append(t.savepoints, sp)
		return res, nil
	}
	// The newest savepoint of that name, as PostgreSQL finds it.
	i := len(t.savepoints) - 1
	for i >= 0 && t.savepoints[i].name != n.Name {
		i--
	}
	if i < 0 {
		return nil, sqlerr.New(sqlerr.InvalidSavepointSpec, "savepoint %q does not exist", n.Name)
	}
	if n.Op == parse.TxSavepointRelease {
		t.savepoints = t.savepoints[:i]
		return res, nil
	}
	sp := t.savepoints[i]
	t.savepoints = t.savepoints[:i+1]
	t.truncate(sp.marks)
	if sp.cursors < len(t.cursors) {
		later := &txn{cursors: t.cursors[sp.cursors:]}
		s.closeCursors(later, true)
		t.cursors = t.cursors[:sp.cursors]
	}
	s.restoreVars(sp.vars, res)
	t.failed = false
	return res, nil
}

// truncate drops the writes after marks (the streams first written after
// them entirely).
func (t *txn) truncate(marks []txMark) {
	t.keyedForget()
	for i, w := range t.writes {
		m := txMark{}
		if i < len(marks) {
			// A failed staging may have left fewer; keep what is there.
			m = txMark{recs: min(marks[i].recs, len(w.recs)), stages: min(marks[i].stages, len(w.stages))}
		}
		for _, r := range w.recs[m.recs:] {
			r.Release()
		}
		w.recs = w.recs[:m.recs]
		for _, st := range w.stages[m.stages:] {
			st.Abort()
		}
		w.stages = w.stages[:m.stages]
	}
	t.writes = t.writes[:min(len(marks), len(t.writes))]
	t.mem = 0
	for _, w := range t.writes {
		for _, r := range w.recs {
			t.mem += recordBytes(r)
		}
	}
}

// stageCuts is where staging must split the in-memory batches of the
// writes at index wi so that every savepoint's mark stays a boundary:
// the distinct record counts strictly inside (0, n).
func (t *txn) stageCuts(wi, n int) []int {
	var cuts []int
	for _, sp := range t.savepoints {
		if wi < len(sp.marks) && sp.marks[wi].recs > 0 && sp.marks[wi].recs < n {
			cuts = append(cuts, sp.marks[wi].recs)
		}
	}
	slices.Sort(cuts)
	return slices.Compact(cuts)
}

// staged moves the savepoints' marks of writes wi after its first n
// in-memory batches were staged as stages first..first+len(cuts), split
// at cuts.
func (t *txn) staged(wi, n, first int, cuts []int) {
	for k := range t.savepoints {
		sp := &t.savepoints[k]
		if wi >= len(sp.marks) {
			continue
		}
		m := &sp.marks[wi]
		if m.stages < first || m.recs == 0 {
			continue // before the staged batches
		}
		// The segment boundaries are first, first+1, ... at 0, cuts..., n.
		seg := len(cuts) + 1
		if m.recs < n {
			seg, _ = slices.BinarySearch(cuts, m.recs)
			seg++
		}
		m.stages, m.recs = first+seg, 0
	}
}

// copyVars copies session settings.
func copyVars(v map[string]string) map[string]string {
	out := make(map[string]string, len(v))
	for k, x := range v {
		out[k] = x
	}
	return out
}

func errInFailedTxn() error {
	return sqlerr.New(sqlerr.InFailedTransaction, "current transaction is aborted, commands ignored until end of transaction block")
}

// failBlock fails an explicit block after an error that happens before a
// statement runs (a syntax error, a Parse message that does not bind), as
// PostgreSQL does for any error in a block. Implicit transactions end at
// ReadyForQuery or Sync anyway.
func (s sessionTxBlock) failBlock() {
	if s.txn != nil && s.txn.explicit {
		s.fail()
	}
}

// checkFailedBlock refuses to prepare st in a failed block unless it ends
// the block or rolls back to a savepoint (PostgreSQL checks this at Parse).
func (s sessionTxBlock) checkFailedBlock(st *Stmt) error {
	if s.txn == nil || !s.txn.failed {
		return nil
	}
	switch class, _ := s.classify(st); class {
	case classTxEnd:
		return nil
	case classTxSavepoint:
		if planOf(st).impl.(*parse.TxSavepoint).Op == parse.TxSavepointRollback {
			return nil
		}
	}
	return errInFailedTxn()
}
