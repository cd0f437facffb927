package sql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// The query family: what the TiDB parser parses (SELECT, INSERT, EXPLAIN,
// DROP TABLE, SHOW TABLES, SET name = value), cursors (DECLARE, FETCH,
// CLOSE: show.go) and prepared statements (PREPARE, EXECUTE, DEALLOCATE,
// DISCARD: prepare.go).
func init() {
	on(func(s *Session, ctx context.Context, st *Stmt, n *parse.Query, params []types.Datum) (*Result, error) {
		return s.execQuery(ctx, st, n, params)
	})
	on(func(s *Session, ctx context.Context, _ *Stmt, n *parse.Declare, _ []types.Datum) (*Result, error) {
		return (sessionCursors{s}).declare(ctx, n)
	})
	on(func(s *Session, ctx context.Context, st *Stmt, n *parse.Fetch, _ []types.Datum) (*Result, error) {
		return (sessionCursors{s}).fetch(ctx, st, n)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.CloseCursor, _ []types.Datum) (*Result, error) {
		return (sessionCursors{s}).closeCursor(n)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.Prepare, _ []types.Datum) (*Result, error) {
		return (sessionPrepared{s}).prepare(n)
	})
	on(func(s *Session, ctx context.Context, st *Stmt, n *parse.Execute, _ []types.Datum) (*Result, error) {
		return (sessionPrepared{s}).execute(ctx, st, n)
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.Discard, _ []types.Datum) (*Result, error) {
		if n.Deallocate != "" {
			return (sessionPrepared{s}).deallocate(n.Deallocate)
		}
		s.prepared = nil
		if s.proto != nil {
			s.proto.DropAll()
		}
		for name := range s.cursors {
			(sessionCursors{s}).closeCursor(&parse.CloseCursor{Cursor: name})
		}
		return &Result{Tag: "DISCARD ALL"}, nil
	})
}

func (s *Session) execQuery(ctx context.Context, st *Stmt, q *parse.Query, params []types.Datum) (*Result, error) {
	if q.EmitOnWindowClose {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "EMIT ON WINDOW CLOSE is only supported in CREATE MATERIALIZED VIEW")
	}
	b := &bind.Binder{Cat: s.e, Params: append([]types.T(nil), st.ParamTypes...), User: s.user, LimitParams: q.LimitParams, ParamValues: append([]types.Datum{}, params...), Session: sessionInfo{s}}
	switch n := q.Node.(type) {
	case ast.ResultSetNode:
		b.Cat = readCatalog(s.e)
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
	case *ast.UpdateStmt:
		return (sessionDML{s}).execUpdate(ctx, st, b, q, n, params)
	case *ast.DeleteStmt:
		return (sessionDML{s}).execDelete(ctx, st, b, q, n, params)
	case *ast.InsertStmt:
		if res, ok, err := (sessionDML{s}).execKeyedInsert(ctx, st, b, q, n, params); ok {
			return res, err
		}
		b.Cat = insertCatalog(s.e, n) // cluster mode: reads the shared log (clusterstream.go)
		target, src, err := b.BindInsert(n)
		if err != nil {
			return nil, err
		}
		ret, err := bindReturning(b, st, q, target, "")
		if err != nil {
			return nil, err
		}
		defer ret.drop()
		ectx := s.exprCtx(params)
		count, err := s.e.insert(ctx, target, src, ectx, s.workMem(), s.txn, func(r arrow.RecordBatch) error { return ret.add(ectx, r) })
		if err != nil {
			return nil, err
		}
		return ret.result(fmt.Sprintf("INSERT 0 %d", count)), nil
	case *ast.ExplainStmt:
		rs, ok := n.Stmt.(ast.ResultSetNode)
		if !ok {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "EXPLAIN supports queries only")
		}
		b.Cat = readCatalog(s.e)
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
			return (sessionShow{s}).execShow(st, &parse.ShowObjects{What: "tables"})
		}
	case *ast.SetStmt:
		for _, v := range n.Variables {
			val := ""
			if ve, ok := v.Value.(ast.ValueExpr); ok {
				val = fmt.Sprint(ve.GetValue())
			}
			if _, err := (sessionSettings{s}).execSet(&parse.Set{Name: strings.ToLower(v.Name), Value: val}); err != nil {
				return nil, err
			}
		}
		return &Result{Tag: "SET"}, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "statement not supported: %s", q.SQL)
}
