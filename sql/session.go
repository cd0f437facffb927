package sql

import (
	"context"
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
	// clusterApply marks a session that applies the cluster's catalog log
	// (ApplyDDL): its DDL runs here and is not sent to the log again.
	clusterApply bool
	// clusterForwarded marks a session that answers a read another node
	// forwarded here (clusterjobs.go): it never forwards again.
	clusterForwarded bool
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
		s.vars[k] = e.conf.setting(k) // for SHOW; execSet refuses to change them
	}
	(sessionAuth{s}).setSuperuserVar()
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
	res, err := (sessionSettings{s}).execSet(&parse.Set{Name: name, Value: value})
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
		(sessionTxBlock{s}).failBlock()
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
		out[i] = newStmt(query, stmtPlan{impl: st, group: g, last: i == len(stmts)-1})
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
			(sessionTxBlock{s}).failBlock()
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
	st = newStmt(query, stmtPlan{impl: stmts[0], extended: true})
	if err := (sessionTxBlock{s}).checkFailedBlock(st); err != nil {
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
	err = s.describe(st)
	if err != nil && catalogBehind(ctx, s.e, err) {
		st.ParamTypes = params
		err = s.describe(st)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// describe binds a query to learn its parameter and result types.
func (s *Session) describe(st *Stmt) error {
	switch n := planOf(st).impl.(type) {
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
			if err := describeConflict(b, n, q); err != nil {
				return err
			}
			if err := describeReturning(b, st, n); err != nil {
				return err
			}
		case *ast.UpdateStmt, *ast.DeleteStmt:
			if err := describeDML(b, q); err != nil {
				return err
			}
			if err := describeReturning(b, st, n); err != nil {
				return err
			}
		case *ast.ExplainStmt:
			st.Columns = []Column{{Name: "QUERY PLAN", T: types.TText}}
		}
		st.ParamTypes = b.Params
	case *parse.Execute:
		return (sessionPrepared{s}).describeExecute(st, n)
	case *parse.Show, *parse.ShowObjects, *parse.ShowCreate, *parse.Fetch:
		// Columns are known once executed; describe by executing nothing.
		cols, err := (sessionShow{s}).showColumns(planOf(st).impl.(parse.Statement))
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
	if err != nil && s.txn == nil && catalogBehind(ctx, s.e, err) {
		res, err = s.dispatch(ctx, st, params) // it failed before it did anything
	}
	if err != nil {
		s.paramChanges = nil
	} else {
		(sessionSettings{s}).takeParamChanges(res)
	}
	if d, ok := planOf(st).impl.(*parse.Declare); ok && err == nil && s.txn != nil {
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

// statementWords names a statement for a message by its leading keywords
// as the user wrote them (DELETE, ALTER SYSTEM, ...), never by a Go type.
func statementWords(st *Stmt) string {
	text := st.SQL
	if q, ok := planOf(st).impl.(*parse.Query); ok && q.SQL != "" {
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
