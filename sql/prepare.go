package sql

import (
	"context"
	"fmt"
	"strings"

	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// SQL-level prepared statements (PREPARE, EXECUTE, DEALLOCATE) are the
// session's, by name. The extended protocol's named statements are
// wire/'s, but PostgreSQL has one namespace for both: PREPARE of a name
// the protocol uses (and a Parse of a PREPARE'd name) is 42P05, and
// DEALLOCATE name | ALL and DISCARD ALL drop protocol statements too, which
// pgx and pgjdbc rely on.

// SetProtocolStatements gives the session its connection's protocol
// statements.
func (s *Session) SetProtocolStatements(p ProtocolStatements) { s.proto = p }

// HasPrepared reports whether PREPARE made a statement of that name.
func (s *Session) HasPrepared(name string) bool {
	_, ok := s.prepared[name]
	return ok
}

// prepare runs PREPARE: the statement is described now (its parameter
// types: given, else inferred as the extended protocol does) and bound
// again at each EXECUTE, so it sees the catalog as it is then.
func (s sessionPrepared) prepare(n *parse.Prepare) (*Result, error) {
	if _, dup := s.prepared[n.Name]; dup || s.proto != nil && s.proto.Has(n.Name) {
		return nil, sqlerr.New(sqlerr.DuplicatePreparedStmt, "prepared statement %q already exists", n.Name)
	}
	switch n.Stmt.(type) {
	case *parse.Query, *parse.Copy, *parse.Show, *parse.ShowObjects:
	default:
		// PostgreSQL prepares SELECT, INSERT, UPDATE, DELETE, MERGE and VALUES only.
		return nil, sqlerr.New(sqlerr.SyntaxError, "PREPARE supports queries and INSERT only")
	}
	if c, ok := n.Stmt.(*parse.Copy); ok && c.From {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "PREPARE of COPY FROM STDIN is not supported")
	}
	st := newStmt(n.SQL, stmtPlan{impl: n.Stmt})
	st.ParamTypes = append([]types.T(nil), n.Types...)
	for i, t := range st.ParamTypes {
		if t.Kind == types.Numeric {
			// PostgreSQL's parameters have no type modifier: PREPARE
			// q(numeric(10,3)) takes 2.5 as 2.5, not 2.500.
			st.ParamTypes[i] = types.TNumeric
		}
	}
	markCopy(st, n.Stmt)
	if err := s.describe(st); err != nil {
		return nil, err
	}
	if s.prepared == nil {
		s.prepared = map[string]*Stmt{}
	}
	s.prepared[n.Name] = st
	return &Result{Tag: "PREPARE"}, nil
}

// lookupPrepared finds a prepared statement (26000 if none).
func (s sessionPrepared) lookupPrepared(name string) (*Stmt, error) {
	st, ok := s.prepared[name]
	if !ok {
		return nil, sqlerr.New(sqlerr.InvalidSQLStatementName, "prepared statement %q does not exist", name)
	}
	return st, nil
}

// describeExecute gives EXECUTE the result columns of its statement.
func (s sessionPrepared) describeExecute(st *Stmt, n *parse.Execute) error {
	p, err := s.lookupPrepared(n.Name)
	if err != nil {
		return err
	}
	st.Columns = p.Columns
	return nil
}

// execute runs EXECUTE: the arguments are evaluated as one SELECT of each
// cast to its parameter's type, then the statement runs with them.
func (s sessionPrepared) execute(ctx context.Context, st *Stmt, n *parse.Execute) (*Result, error) {
	p, err := s.lookupPrepared(n.Name)
	if err != nil {
		return nil, err
	}
	if len(n.ArgsText) != len(p.ParamTypes) {
		return nil, &sqlerr.Error{Code: sqlerr.SyntaxError,
			Msg:    fmt.Sprintf("wrong number of parameters for prepared statement %q", n.Name),
			Detail: fmt.Sprintf("Expected %d parameters but got %d.", len(p.ParamTypes), len(n.ArgsText))}
	}
	params, err := s.evalArgs(ctx, n.ArgsText, p.ParamTypes)
	if err != nil {
		return nil, err
	}
	inner := *p
	res, err := s.dispatch(ctx, &inner, params)
	st.Columns = inner.Columns
	st.CopyOut = inner.CopyOut
	return res, err
}

// evalArgs evaluates EXECUTE's arguments as the parameters' types.
func (s sessionPrepared) evalArgs(ctx context.Context, args []string, ts []types.T) ([]types.Datum, error) {
	if len(args) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "CAST((%s) AS %s)", a, ts[i])
	}
	stmts, err := parse.ParseAll(b.String())
	if err != nil {
		return nil, err
	}
	q, ok := stmts[0].(*parse.Query)
	if len(stmts) != 1 || !ok {
		return nil, sqlerr.New(sqlerr.SyntaxError, "EXECUTE arguments must be expressions")
	}
	var st Stmt
	res, err := s.execQuery(ctx, &st, q, nil)
	if err != nil {
		return nil, err
	}
	defer res.Rows.Close()
	rec, err := res.Rows.Next(ctx)
	if err != nil {
		return nil, err
	}
	if rec == nil || rec.NumRows() != 1 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "EXECUTE arguments must be expressions")
	}
	defer rec.Release()
	out := make([]types.Datum, len(args))
	for i := range out {
		// The cast's result type may be narrower than the parameter's:
		// CAST(1 AS numeric) is numeric at scale 0, a numeric parameter is
		// held at the unconstrained scale.
		from := ts[i]
		if i < len(st.Columns) {
			from = st.Columns[i].T
		}
		d := types.DatumAt(rec.Column(i), 0, from)
		if from != ts[i] {
			if d, err = types.CastDatum(d, from, ts[i]); err != nil {
				return nil, err
			}
		}
		out[i] = d
	}
	return out, nil
}

// deallocate runs DEALLOCATE [PREPARE] name | ALL.
func (s sessionPrepared) deallocate(name string) (*Result, error) {
	if name == "all" {
		s.prepared = nil
		if s.proto != nil {
			s.proto.DropAll()
		}
		return &Result{Tag: "DEALLOCATE ALL"}, nil
	}
	if s.proto != nil && s.proto.Has(name) {
		s.proto.Drop(name)
		return &Result{Tag: "DEALLOCATE"}, nil
	}
	if _, err := s.lookupPrepared(name); err != nil {
		return nil, err
	}
	delete(s.prepared, name)
	return &Result{Tag: "DEALLOCATE"}, nil
}

// executeClass places EXECUTE in a transaction as the statement it runs.
func (s sessionPrepared) executeClass(n *parse.Execute) (stmtClass, string) {
	p, err := s.lookupPrepared(n.Name)
	if err != nil {
		return classOther, "" // the error comes when it runs
	}
	return s.classify(p)
}
