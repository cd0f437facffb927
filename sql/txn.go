package sql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Transactions. Streams are append-only logs, so a transaction is its
// appends: INSERT and COPY inside a transaction buffer their rows, COMMIT
// appends all of them in one synced write (storage.CommitAppends) and
// ROLLBACK drops them, as Materialize does for its tables.
//
//   - An explicit block (BEGIN ... COMMIT) holds its writes until COMMIT.
//     After an error it is failed: every statement but COMMIT/ROLLBACK gets
//     25P02, and COMMIT rolls back.
//   - A simple-protocol Query message of several statements outside a block
//     is one implicit transaction: its writes are appended after its last
//     statement, and an error in any statement discards them all.
//   - A read (SELECT, COPY TO, DECLARE) after the transaction's own writes
//     would not see them. An explicit block refuses it (25000, as
//     Materialize does); an implicit one appends the writes so far first, so
//     the read sees them, and goes on as a new implicit transaction.
//   - DDL, CHECKPOINT, savepoints, jobs, roles and database settings are not
//     transactional: an explicit block refuses them (25001, PostgreSQL's code
//     for its non-transactional commands); in an implicit one they append
//     the writes before them and run on their own, like a read.
//   - Session settings changed in a block are restored by ROLLBACK, and
//     the cursors declared in it are closed; COMMIT closes those declared
//     without WITH HOLD.
//
// The extended protocol outside a block is one implicit transaction from
// its first Execute to Sync, as in PostgreSQL (a pgx Batch is one): Sync
// appends the writes (Session.Sync), an error drops them and the protocol
// skips to Sync. Reads and non-transactional statements inside it act as
// in a simple-protocol one.
type txn struct {
	explicit bool
	failed   bool
	// group is the statement group (Query message) of an implicit
	// transaction; nil for the extended protocol's, which Sync ends.
	group *stmtGroup
	// writes per table id, in the order the tables were first written.
	writes []*txWrites
	// mem is the input held in memory (batches not staged).
	mem int64
	// logMem bounds mem for rows of streams in the cluster's stream log,
	// kept in memory until COMMIT produces them in one Kafka transaction:
	// the session's work_mem, read at each statement.
	logMem int64
	// vars are the session's settings at BEGIN, for ROLLBACK.
	vars map[string]string
	// cursors declared in the transaction: ROLLBACK closes them, and the
	// COMMIT of a block those without WITH HOLD, as PostgreSQL does.
	// (Outside a block, where PostgreSQL refuses DECLARE without WITH HOLD,
	// streamdb's cursors live until CLOSE.)
	cursors []txCursor
	// savepoints of the block, oldest first (sql/txsavepoint.go).
	savepoints []txSavepoint
	// local are the settings SET LOCAL changed, with their values before
	// (sql/setconfig.go); COMMIT restores them.
	local map[string]localVar
	// keyed are the keyed tables the block wrote, their write locks held
	// until it ends; waitFor is the lock it waits for (keyedtx.go).
	keyed   []*txKeyed
	waitFor *keyedState
}

// txCursor is a cursor declared in a transaction.
type txCursor struct {
	name string
	hold bool
}

// txWrites are the rows a transaction appends to one table.
type txWrites struct {
	t      *storage.TableDef
	recs   []arrow.RecordBatch
	stages []*storage.Stage
}

// stmtGroup marks the statements of one simple-protocol Query message.
type stmtGroup struct{ n int }

// txMemBytes is the rows a transaction keeps in memory; past it they are
// staged in storage as a large COPY's are (storage.Stage), so a
// transaction's size is bounded by disk, not memory.
const txMemBytes = copyStageBytes

// stmtClass is how a statement relates to a transaction.
type stmtClass uint8

const (
	classOther       stmtClass = iota // session state: SHOW, SET of a session setting, cursors' FETCH/CLOSE
	classTxBegin                      // BEGIN / START TRANSACTION
	classTxEnd                        // COMMIT / ROLLBACK
	classWrite                        // INSERT, COPY FROM
	classRead                         // SELECT, COPY TO, DECLARE
	classDDL                          // not transactional
	classTxSavepoint                  // SAVEPOINT, RELEASE, ROLLBACK TO
)

// classify places a statement in a stmtClass; for classDDL it also gives
// the statement's name for the 25001 message.
func (s *Session) classify(st *Stmt) (stmtClass, string) {
	switch n := planOf(st).impl.(type) {
	case *parse.Query:
		switch q := n.Node.(type) {
		case *ast.BeginStmt:
			return classTxBegin, ""
		case *ast.CommitStmt, *ast.RollbackStmt:
			return classTxEnd, ""
		case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt:
			return classWrite, ""
		case ast.ResultSetNode:
			return classRead, ""
		case *ast.ExplainStmt, *ast.ShowStmt:
			return classOther, ""
		case *ast.SetStmt:
			for _, v := range q.Variables {
				if _, ok := dbSettings[v.Name]; ok {
					return classDDL, "SET " + v.Name
				}
			}
			return classOther, ""
		}
		return classDDL, statementWords(st)
	case *parse.Copy:
		if n.From {
			return classWrite, ""
		}
		return classRead, ""
	case *parse.Declare:
		return classRead, ""
	case *parse.Set:
		if _, ok := dbSettings[n.Name]; ok {
			return classDDL, "SET " + n.Name
		}
		return classOther, ""
	case *parse.Reset:
		if _, ok := dbSettings[n.Name]; ok {
			return classDDL, "RESET " + n.Name
		}
		return classOther, ""
	case *parse.Show, *parse.ShowObjects, *parse.ShowCreate, *parse.Fetch, *parse.CloseCursor, *parse.Discard:
		return classOther, ""
	case *parse.Prepare:
		return classOther, ""
	case *parse.Execute:
		return (sessionPrepared{s}).executeClass(n)
	case *parse.TxSavepoint:
		return classTxSavepoint, ""
	case *parse.CreateView:
		return classDDL, "CREATE MATERIALIZED VIEW"
	case *parse.CreatePlainView:
		return classDDL, "CREATE VIEW"
	case *parse.Drop:
		return classDDL, "DROP " + strings.ToUpper(string(n.Kind))
	}
	return classDDL, statementWords(st)
}

// beforeStatement applies the transaction rules to st before it runs. It
// returns a non-nil Result when the statement is the transaction control
// itself (BEGIN, COMMIT, ROLLBACK), already executed.
func (s *Session) beforeStatement(ctx context.Context, st *Stmt) (*Result, error) {
	class, name := s.classify(st)
	if (planOf(st).group != nil || planOf(st).extended) && s.txn == nil && class != classTxEnd {
		s.txn = &txn{group: planOf(st).group}
	}
	t := s.txn
	if t != nil {
		t.logMem = s.workMem()
	}
	switch class {
	case classTxBegin:
		if t != nil && t.explicit {
			return &Result{Tag: "BEGIN", Notices: []string{"there is already a transaction in progress"}}, nil
		}
		if t == nil {
			t = &txn{logMem: s.workMem()}
			s.txn = t
		}
		t.explicit = true
		t.vars = copyVars(s.vars)
		return &Result{Tag: "BEGIN"}, nil
	case classTxEnd:
		rollback := false
		if q, ok := planOf(st).impl.(*parse.Query); ok {
			_, rollback = q.Node.(*ast.RollbackStmt)
		}
		if t == nil {
			tag := "COMMIT"
			if rollback {
				tag = "ROLLBACK"
			}
			return &Result{Tag: tag, Notices: []string{"there is no transaction in progress"}}, nil
		}
		if rollback || t.failed {
			return s.rollback(), nil
		}
		err := s.commit()
		res := &Result{Tag: "COMMIT"}
		if t.explicit {
			s.closeCursors(t, false)
			(sessionSettings{s}).restoreLocals(t, res)
		}
		if err != nil {
			return nil, err
		}
		return res, nil
	case classTxSavepoint:
		return (sessionTxBlock{s}).txSavepointStmt(planOf(st).impl.(*parse.TxSavepoint))
	}
	if t == nil {
		return nil, nil
	}
	if t.failed {
		return nil, errInFailedTxn()
	}
	switch class {
	case classDDL:
		if t.explicit {
			return nil, sqlerr.New(sqlerr.ActiveSQLTransaction, "%s cannot run inside a transaction block", name)
		}
		return nil, s.commitWrites()
	case classRead:
		if len(t.writes) == 0 {
			return nil, nil
		}
		if t.explicit {
			return nil, &sqlerr.Error{Code: sqlerr.InvalidTxState, Msg: "transaction in write-only mode",
				Detail: "A read after the transaction's own INSERT or COPY would not see its rows: they are appended at COMMIT.",
				Hint:   "Read before writing, or COMMIT first."}
		}
		return nil, s.commitWrites()
	}
	return nil, nil
}

// afterStatement ends an implicit transaction after its group's last
// statement; last is set when st was that statement.
func (s *Session) afterStatement(st *Stmt, err error) error {
	t := s.txn
	if t == nil {
		return err
	}
	if err != nil {
		s.fail()
		return err
	}
	if !t.explicit && t.group != nil && planOf(st).group == t.group && planOf(st).last {
		if err := s.commit(); err != nil {
			return err
		}
	}
	return nil
}

// Sync ends the extended protocol's implicit transaction (the Sync
// message): its writes are appended, or dropped when failed says a message
// since the last Sync failed (a Parse or Bind error, which the session did
// not see). Inside a block it does nothing.
func (s *Session) Sync(failed bool) error {
	t := s.txn
	if t == nil || t.explicit || t.group != nil {
		return nil
	}
	if failed {
		t.discard()
		s.txn = nil
		return nil
	}
	return s.commit()
}

// fail handles an error inside a transaction: an explicit block is failed
// until ROLLBACK (or ROLLBACK TO a savepoint), an implicit transaction
// ends. Its writes are dropped, unless the block has savepoints to return
// to.
func (s *Session) fail() {
	t := s.txn
	if t == nil {
		return
	}
	if t.explicit {
		t.failed = true
		if len(t.savepoints) == 0 {
			t.discard()
		}
		return
	}
	t.discard()
	s.txn = nil
}

// commitWrites appends the transaction's writes so far, keeping it open.
func (s *Session) commitWrites() error {
	t := s.txn
	if len(t.writes) == 0 {
		return nil
	}
	if s.e.streamLog != nil {
		return clusterCommitWrites(s) // one Kafka transaction (clusterstream.go)
	}
	apps := make([]storage.TxAppend, 0, len(t.writes))
	for _, w := range t.writes {
		part, err := s.e.appendPartition(w.t)
		if err != nil {
			t.discard()
			return err
		}
		apps = append(apps, storage.TxAppend{Table: w.t.ID, Part: part, Recs: w.recs, Stages: w.stages})
	}
	err := s.e.db.Log().CommitAppends(apps)
	for _, w := range t.writes {
		w.stages = nil // finished by CommitAppends either way
	}
	if err == nil {
		t.keyedCommitted(s.e.db)
	}
	t.discard()
	return err
}

// commit appends the transaction's writes and ends it.
func (s *Session) commit() error {
	t := s.txn
	err := s.commitWrites()
	t.keyedRelease()
	s.txn = nil
	return err
}

// rollback drops the transaction's writes, restores the session settings
// of BEGIN and ends it.
func (s *Session) rollback() *Result {
	t := s.txn
	s.txn = nil
	t.discard()
	s.closeCursors(t, true)
	res := &Result{Tag: "ROLLBACK"}
	if t.vars != nil {
		s.restoreVars(t.vars, res)
	}
	return res
}

// restoreVars sets the session's settings back to vars, reporting the
// changed ones in res.
func (s *Session) restoreVars(vars map[string]string, res *Result) {
	for k, v := range vars {
		if s.vars[k] != v {
			s.vars[k] = v
			if report, ok := reportedParams[k]; ok {
				if res.ParamChanges == nil {
					res.ParamChanges = map[string]string{}
				}
				res.ParamChanges[report] = v
			}
		}
	}
	for k := range s.vars {
		if _, ok := vars[k]; !ok {
			delete(s.vars, k)
		}
	}
}

// closeCursors closes the cursors declared in t that are still open: all
// of them, or (all false) those without WITH HOLD.
func (s *Session) closeCursors(t *txn, all bool) {
	hold := map[string]bool{} // a name's last declaration is the open cursor's
	for _, c := range t.cursors {
		hold[c.name] = c.hold
	}
	for name, h := range hold {
		if _, ok := s.cursors[name]; ok && (all || !h) {
			(sessionCursors{s}).closeCursor(&parse.CloseCursor{Cursor: name})
		}
	}
}

// discard drops the buffered writes (and the rows of the keyed tables
// under the block's locks, which it releases).
func (t *txn) discard() {
	t.keyedRelease()
	for _, w := range t.writes {
		for _, r := range w.recs {
			r.Release()
		}
		for _, st := range w.stages {
			st.Abort()
		}
	}
	t.writes, t.mem = nil, 0
}

// table returns the writes to t, adding them.
func (t *txn) table(def *storage.TableDef) *txWrites {
	for _, w := range t.writes {
		if w.t.ID == def.ID {
			return w
		}
	}
	w := &txWrites{t: def}
	t.writes = append(t.writes, w)
	return w
}

// addRecs buffers rows for def; it retains recs. Past txMemBytes the
// transaction's buffered rows are staged.
func (t *txn) addRecs(db *storage.DB, def *storage.TableDef, recs []arrow.RecordBatch) error {
	if logTopic(def) != "" {
		var add int64
		for _, r := range recs {
			add += recordBytes(r)
		}
		if t.logMem > 0 && t.mem+add > t.logMem {
			return &sqlerr.Error{Code: sqlerr.OutOfMemory,
				Msg: fmt.Sprintf("the transaction's rows for the cluster's stream log would take %s, past work_mem (%s): they stay in memory until COMMIT",
					plan.FormatMemory(t.mem+add), plan.FormatMemory(t.logMem)),
				Hint: "Commit in smaller transactions, or raise work_mem."}
		}
	}
	w := t.table(def)
	for _, r := range recs {
		if r.NumRows() == 0 {
			continue
		}
		r.Retain()
		w.recs = append(w.recs, r)
		t.mem += recordBytes(r)
	}
	if t.mem <= txMemBytes || logTopic(def) != "" || plan.Keyed(def) {
		// Cluster mode keeps them for one Kafka transaction, as its COPY
		// does; a keyed table's changes stay for ROLLBACK TO (keyedtx.go).
		return nil
	}
	for wi := range t.writes {
		if err := t.stageWrites(db, wi); err != nil {
			return err
		}
	}
	t.mem = 0
	return nil
}

// stageWrites moves the in-memory batches of writes wi into stages, one
// per stretch between savepoint marks so that every mark stays a boundary.
func (t *txn) stageWrites(db *storage.DB, wi int) error {
	w := t.writes[wi]
	n := len(w.recs)
	if n == 0 || plan.Keyed(w.t) {
		return nil
	}
	cuts := t.stageCuts(wi, n)
	first := len(w.stages)
	for _, r := range w.recs {
		t.mem -= recordBytes(r)
	}
	from := 0
	for _, to := range append(cuts, n) {
		st, err := db.Stages().New(w.t.ID)
		if err != nil {
			return err
		}
		w.stages = append(w.stages, st)
		for i := from; i < to; i++ {
			err := st.Add(w.recs[i])
			w.recs[i].Release()
			w.recs[i] = nil
			if err != nil {
				for _, r := range w.recs[i+1:] {
					r.Release()
				}
				w.recs = nil
				return err
			}
		}
		from = to
	}
	w.recs = nil
	t.staged(wi, n, first, cuts)
	return nil
}

// addStage hands a staged COPY to the transaction. The in-memory batches
// before it are staged first when a savepoint lies among them, so that a
// savepoint's mark (batches, then stages) stays a prefix of the writes.
func (t *txn) addStage(db *storage.DB, def *storage.TableDef, st *storage.Stage) error {
	w := t.table(def)
	if len(t.savepoints) > 0 && len(w.recs) > 0 {
		for wi := range t.writes {
			if t.writes[wi] == w {
				if err := t.stageWrites(db, wi); err != nil {
					st.Abort()
					return err
				}
			}
		}
	}
	w.stages = append(w.stages, st)
	return nil
}

// recordBytes is the memory of r's buffers (and its children's: a list
// column's values count too).
func recordBytes(r arrow.RecordBatch) int64 { return int64(storage.PaddedBufferBytes(r, 0)) }

// txRows wraps the rows of a statement run inside a transaction so that an
// error while they are sent fails the transaction too.
type txRows struct {
	Rows
	s *Session
}

func (r *txRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := r.Rows.Next(ctx)
	if err != nil {
		r.s.fail()
	}
	return rec, err
}

// txCopyIn wraps a COPY FROM STDIN run inside a transaction: its end is
// the statement's end.
type txCopyIn struct {
	CopyIn
	s  *Session
	st *Stmt
}

func (c *txCopyIn) Done() (string, error) {
	tag, err := c.CopyIn.Done()
	if err := c.s.afterStatement(c.st, err); err != nil {
		return "", err
	}
	return tag, nil
}

func (c *txCopyIn) Abort(reason string) {
	c.CopyIn.Abort(reason)
	c.s.fail()
}
