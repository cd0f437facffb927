package planner

import "github.com/streamdb/streamdb/exec/expr"

// ProjectSRF runs a select list's set-returning functions (unnest,
// generate_subscripts, _pg_expandarray) per row of Input, in lockstep (plan.ProjectSRF):
// Input's columns, then one per function.
type ProjectSRF struct {
	Input Node
	Funcs []string
	Args  [][]expr.Expr
	Cols  []Column
}

func (n *ProjectSRF) Schema() []Column {
	return append(append([]Column(nil), n.Input.Schema()...), n.Cols...)
}
func (n *ProjectSRF) Children() []Node { return []Node{n.Input} }
