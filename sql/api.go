package sql

import "github.com/streamdb/streamdb/sql/api"

// The surface wire/ uses is package api; these names keep the engine's
// code and its callers reading sql.Stmt, sql.Result.
type (
	Column             = api.Column
	Rows               = api.Rows
	Stmt               = api.Stmt
	Result             = api.Result
	CopyIn             = api.CopyIn
	ProtocolStatements = api.ProtocolStatements
)

// stmtPlan is what the engine keeps in a Stmt's Plan.
type stmtPlan struct {
	impl any // the parsed statement (a parse.* node)
	// group is the Query message the statement came in when that held
	// several (one implicit transaction); last marks its last statement.
	group *stmtGroup
	last  bool
	// extended marks a statement of the extended protocol (Prepare):
	// outside a block it joins the implicit transaction that Sync ends.
	extended bool
}

// newStmt makes a statement of sql with the engine's plan p.
func newStmt(sql string, p stmtPlan) *Stmt { return &Stmt{SQL: sql, Plan: &p} }

// planOf is the engine's plan of st.
func planOf(st *Stmt) *stmtPlan { return st.Plan.(*stmtPlan) }
