package planner

import "github.com/streamdb/streamdb/exec/expr"

// FuncScan is a set-returning function in FROM (generate_series, unnest);
// its arguments are constants or parameters (exec.FuncScan).
type FuncScan struct {
	Func string
	Args []expr.Expr
	Col  Column
}

func (n *FuncScan) Schema() []Column { return []Column{n.Col} }
func (n *FuncScan) Children() []Node { return nil }
