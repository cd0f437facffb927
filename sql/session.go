package sql

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Session is one client's connection state.
type Session struct {
	e       *Engine
	user    string
	vars    map[string]string
	cursors map[string]*cursor
	// txn is the transaction in progress (txn.go), nil outside one.
	txn *txn
	// prepared are the statements of SQL-level PREPARE (prepare.go).
	prepared map[string]*Stmt
	// pid is the process id the client was given (pg_backend_pid()).
	pid int64
	// proto are the connection's protocol-level named statements
	// (prepare.go); nil for a session without a connection.
	proto ProtocolStatements
	// paramChanges are the ParameterStatus changes set_config made in
	// the running statement (setconfig.go).
	paramChanges map[string]string
}

// SetBackendPID records the process id of the session's BackendKeyData.
func (s *Session) SetBackendPID(pid uint32) { s.pid = int64(pid) }

// NewSession starts a session.
func (e *Engine) NewSession(user, database string) *Session {
	s := &Session{e: e, user: user, vars: map[string]string{}, cursors: map[string]*cursor{}}
	for k, v := range sessionDefaults {
		s.vars[k] = v
	}
	for k := range serverSettings {
		s.vars[k] = e.setting(k) // for SHOW; execSet refuses to change them
	}
	s.setSuperuserVar()
	return s
}

// StatementTimeout is the session's statement_timeout; 0 means none.
func (s *Session) StatementTimeout() time.Duration {
	return millisSetting(s.vars["statement_timeout"])
}

// SetParameter applies a setting sent when the connection starts (a
// startup parameter, or -c name=value in its options) as SET would, and
// returns the ParameterStatus values it changes. Database settings are
// refused there (55P02): they are persistent and shared, not a property of
// one connection.
func (s *Session) SetParameter(name, value string) (map[string]string, error) {
	if _, ok := dbSettings[strings.ToLower(name)]; ok {
		return nil, sqlerr.New(sqlerr.CantChangeRuntimeParam,
			"parameter %q is a database setting and cannot be set when connecting; use SET", name)
	}
	res, err := s.execSet(&parse.Set{Name: name, Value: value})
	if err != nil {
		return nil, err
	}
	return res.ParamChanges, nil
}

// TxStatus is the transaction status for ReadyForQuery, which ends every
// Query message: an implicit transaction still open then belongs to a
// message that stopped at an error, so its writes are dropped.
func (s *Session) TxStatus() byte {
	switch t := s.txn; {
	case t == nil:
		return 'I'
	case !t.explicit:
		t.discard()
		s.txn = nil
		return 'I'
	case t.failed:
		return 'E'
	}
	return 'T'
}

// Close ends the session, closing its cursors (and their live jobs) and
// dropping the writes of a transaction left open.
func (s *Session) Close() {
	if s.txn != nil {
		s.txn.discard()
		s.txn = nil
	}
	for _, c := range s.cursors {
		c.rows.Close()
	}
	s.cursors = nil
}

// PrepareAll parses every statement of a simple-protocol query string.
// Statements are bound when executed, so a later statement may use a table
// an earlier one creates.
func (s *Session) PrepareAll(ctx context.Context, query string) ([]*Stmt, error) {
	stmts, err := parse.ParseAll(query)
	if err != nil {
		s.failBlock()
		return nil, err
	}
	if len(stmts) == 0 {
		return []*Stmt{{SQL: query, Empty: true}}, nil
	}
	out := make([]*Stmt, len(stmts))
	var g *stmtGroup
	if len(stmts) > 1 {
		g = &stmtGroup{n: len(stmts)}
	}
	for i, st := range stmts {
		out[i] = &Stmt{SQL: query, impl: st, group: g, last: i == len(stmts)-1}
		markCopy(out[i], st)
	}
	return out, nil
}

func markCopy(out *Stmt, st parse.Statement) {
	if c, ok := st.(*parse.Copy); ok {
		out.CopyIn, out.CopyOut = c.From, !c.From
	}
}

// Prepare parses and describes one statement (extended protocol).
func (s *Session) Prepare(ctx context.Context, query string, paramOIDs []uint32) (st *Stmt, err error) {
	defer func() {
		if err != nil {
			s.failBlock()
		}
	}()
	stmts, err := parse.ParseAll(query)
	if err != nil {
		return nil, err
	}
	if len(stmts) == 0 {
		return &Stmt{SQL: query, Empty: true}, nil
	}
	if len(stmts) > 1 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	st = &Stmt{SQL: query, impl: stmts[0], extended: true}
	if err := s.checkFailedBlock(st); err != nil {
		return nil, err
	}
	markCopy(st, stmts[0])
	params := make([]types.T, len(paramOIDs))
	for i, oid := range paramOIDs {
		t, ok := types.FromOID(oid)
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedObject, "type with OID %d is not supported", oid)
		}
		params[i] = t
	}
	st.ParamTypes = params
	if err := s.describe(st); err != nil {
		return nil, err
	}
	return st, nil
}

// describe binds a query to learn its parameter and result types.
func (s *Session) describe(st *Stmt) error {
	switch n := st.impl.(type) {
	case *parse.Query:
		b := &bind.Binder{Cat: s.e, Params: st.ParamTypes, User: s.user, LimitParams: n.LimitParams, Session: sessionInfo{s}}
		switch q := n.Node.(type) {
		case ast.ResultSetNode:
			plan, err := b.BindQuery(q)
			if err != nil {
				return err
			}
			st.Columns = columnsOf(plan)
			if n.EmitChanges {
				st.Columns = append(st.Columns, Column{Name: "op", T: types.TText})
			}
		case *ast.InsertStmt:
			if _, _, err := b.BindInsert(q); err != nil {
				return err
			}
		case *ast.ExplainStmt:
			st.Columns = []Column{{Name: "QUERY PLAN", T: types.TText}}
		}
		st.ParamTypes = b.Params
	case *parse.Execute:
		return s.describeExecute(st, n)
	case *parse.Show, *parse.ShowObjects, *parse.ShowCreate, *parse.Fetch:
		// Columns are known once executed; describe by executing nothing.
		cols, err := s.showColumns(st.impl.(parse.Statement))
		if err != nil {
			return err
		}
		st.Columns = cols
	}
	return nil
}

func columnsOf(n planner.Node) []Column {
	sch := n.Schema()
	cols := make([]Column, len(sch))
	for i, c := range sch {
		cols[i] = Column{Name: c.Name, T: c.T}
		if c.T.Kind == types.Unknown {
			cols[i].T = types.TText
		}
	}
	return cols
}

// Execute runs a statement.
func (s *Session) Execute(ctx context.Context, st *Stmt, params []types.Datum) (*Result, error) {
	if st.Empty {
		return &Result{}, nil
	}
	if len(params) != len(st.ParamTypes) {
		return nil, sqlerr.New(sqlerr.ProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(params), len(st.ParamTypes))
	}
	res, err := s.beforeStatement(ctx, st)
	if res != nil || err != nil {
		if err != nil {
			s.fail()
		}
		return res, err
	}
	res, err = s.dispatch(ctx, st, params)
	if err != nil {
		s.paramChanges = nil
	} else {
		s.takeParamChanges(res)
	}
	if d, ok := st.impl.(*parse.Declare); ok && err == nil && s.txn != nil {
		s.txn.cursors = append(s.txn.cursors, txCursor{name: d.Cursor, hold: d.Hold})
	}
	if err != nil || s.txn == nil {
		return res, s.afterStatement(st, err)
	}
	switch {
	case res.CopyIn != nil:
		// The statement ends when the data does.
		res.CopyIn = &txCopyIn{CopyIn: res.CopyIn, s: s, st: st}
		return res, nil
	case res.Rows != nil:
		res.Rows = &txRows{Rows: res.Rows, s: s}
	}
	return res, s.afterStatement(st, nil)
}

// dispatch runs a statement after the transaction rules let it.
func (s *Session) dispatch(ctx context.Context, st *Stmt, params []types.Datum) (*Result, error) {
	if err := s.authorize(st); err != nil {
		return nil, err
	}
	switch n := st.impl.(type) {
	case *parse.Query:
		return s.execQuery(ctx, st, n, params)
	case *parse.CreateTable:
		return s.e.createTable(n, s.user)
	case *parse.CreateSource:
		return s.e.createSource(n, s.user)
	case *parse.CreateSink:
		return s.e.createSink(ctx, n, s.user)
	case *parse.DropSink:
		return s.e.dropSink(n)
	case *parse.CreateView:
		return s.e.createView(ctx, n, s.user)
	case *parse.CreatePlainView:
		return s.e.createPlainView(n, s.user)
	case *parse.Drop:
		return s.e.drop(n)
	case *parse.Copy:
		return s.execCopy(ctx, st, n)
	case *parse.Set:
		return s.execSet(n)
	case *parse.Reset:
		return s.execReset(n)
	case *parse.Show, *parse.ShowObjects, *parse.ShowCreate:
		return s.execShow(st, st.impl.(parse.Statement))
	case *parse.Checkpoint:
		if err := s.e.catchUp(ctx); err != nil {
			return nil, err
		}
		return s.e.checkpointStatement(ctx)
	case *parse.Declare:
		return s.declare(ctx, n)
	case *parse.Fetch:
		return s.fetch(ctx, st, n)
	case *parse.CloseCursor:
		return s.closeCursor(n)
	case *parse.Prepare:
		return s.prepare(n)
	case *parse.Execute:
		return s.execute(ctx, st, n)
	case *parse.Discard:
		if n.Deallocate != "" {
			return s.deallocate(n.Deallocate)
		}
		s.prepared = nil
		if s.proto != nil {
			s.proto.DropAll()
		}
		for name := range s.cursors {
			s.closeCursor(&parse.CloseCursor{Cursor: name})
		}
		return &Result{Tag: "DISCARD ALL"}, nil
	case *parse.CreateSavepoint:
		if _, err := s.e.createSavepoint(ctx, n.Name, n.Views); err != nil {
			return nil, err
		}
		return &Result{Tag: "CREATE SAVEPOINT"}, nil
	case *parse.Restore:
		return s.e.restore(ctx, n)
	case *parse.StopJob:
		return s.e.stopJob(ctx, n)
	case *parse.StartJob:
		return s.e.startJob(ctx, n)
	case *parse.AlterView:
		return s.e.alterView(ctx, n)
	case *parse.CreateRole:
		return s.e.createRole(n)
	case *parse.AlterRole:
		return s.e.alterRole(n, s.user)
	case *parse.DropRole:
		return s.e.dropRole(n, s.user)
	case *parse.Grant:
		return s.e.grant(n)
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s is not supported", statementWords(st))
}

// statementWords names a statement for a message by its leading keywords
// as the user wrote them (DELETE, ALTER SYSTEM, ...), never by a Go type.
func statementWords(st *Stmt) string {
	text := st.SQL
	if q, ok := st.impl.(*parse.Query); ok && q.SQL != "" {
		text = q.SQL
	}
	var words []string
	for _, w := range strings.Fields(text) {
		if len(words) == 2 || strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && r != '_' }) >= 0 {
			break
		}
		words = append(words, strings.ToUpper(w))
	}
	if len(words) == 0 {
		return "this statement"
	}
	return strings.Join(words, " ")
}

func (s *Session) exprCtx(params []types.Datum) *expr.Ctx {
	return &expr.Ctx{Mem: exec.Allocator(), Params: params, Now: time.Now().UnixMicro()}
}

func (s *Session) execQuery(ctx context.Context, st *Stmt, q *parse.Query, params []types.Datum) (*Result, error) {
	if q.EmitOnWindowClose {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "EMIT ON WINDOW CLOSE is only supported in CREATE MATERIALIZED VIEW")
	}
	b := &bind.Binder{Cat: s.e, Params: append([]types.T(nil), st.ParamTypes...), User: s.user, LimitParams: q.LimitParams, ParamValues: append([]types.Datum{}, params...), Session: sessionInfo{s}}
	switch n := q.Node.(type) {
	case ast.ResultSetNode:
		plan, err := b.BindQuery(n)
		if err != nil {
			return nil, err
		}
		st.Columns = columnsOf(plan)
		if q.EmitChanges {
			st.Columns = append(st.Columns, Column{Name: "op", T: types.TText})
			rows, err := s.e.changeStream(ctx, plan)
			if err != nil {
				return nil, err
			}
			return &Result{Tag: "SELECT", Rows: rows}, nil
		}
		rows, err := s.e.runQuery(ctx, plan, sessionSnapshots{s.e, s}, s.exprCtx(params), s.workMem())
		if err != nil {
			return nil, err
		}
		return &Result{Tag: "SELECT", Rows: rows, Notices: s.e.viewNotices(plan)}, nil
	case *ast.InsertStmt:
		target, src, err := b.BindInsert(n)
		if err != nil {
			return nil, err
		}
		count, err := s.e.insert(ctx, target, src, s.exprCtx(params), s.workMem(), s.txn)
		if err != nil {
			return nil, err
		}
		return &Result{Tag: fmt.Sprintf("INSERT 0 %d", count)}, nil
	case *ast.ExplainStmt:
		rs, ok := n.Stmt.(ast.ResultSetNode)
		if !ok {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "EXPLAIN supports queries only")
		}
		plan, err := b.BindQuery(rs)
		if err != nil {
			return nil, err
		}
		phys, err := planner.Physical(plan, sessionSnapshots{s.e, s})
		if err != nil {
			return nil, err
		}
		st.Columns = []Column{{Name: "QUERY PLAN", T: types.TText}}
		lines := strings.Split(strings.TrimRight(planner.Explain(phys), "\n"), "\n")
		return &Result{Tag: "EXPLAIN", Rows: textRows(lines)}, nil
	case *ast.DropTableStmt:
		d := &parse.Drop{Kind: parse.ObjTable, IfExists: n.IfExists}
		for _, t := range n.Tables {
			d.Names = append(d.Names, t.Name.L)
		}
		return s.e.drop(d)
	case *ast.ShowStmt:
		if n.Tp == ast.ShowTables {
			return s.execShow(st, &parse.ShowObjects{What: "tables"})
		}
	case *ast.SetStmt:
		for _, v := range n.Variables {
			val := ""
			if ve, ok := v.Value.(ast.ValueExpr); ok {
				val = fmt.Sprint(ve.GetValue())
			}
			if _, err := s.execSet(&parse.Set{Name: strings.ToLower(v.Name), Value: val}); err != nil {
				return nil, err
			}
		}
		return &Result{Tag: "SET"}, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "statement not supported: %s", q.SQL)
}
