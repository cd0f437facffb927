package planner

import "github.com/streamdb/streamdb/exec/expr"

// FuncScan is a set-returning function in FROM (generate_series, unnest);
// its arguments are constants or parameters (plan.FuncScan).
type FuncScan struct {
	Func string
	Args []expr.Expr
	Col  Column
	// Lateral: Args read the enclosing query's columns.
	Lateral bool
}

func (n *FuncScan) Schema() []Column { return []Column{n.Col} }
func (n *FuncScan) Children() []Node { return nil }

// FuncScan's Lateral marks a function whose arguments read the enclosing
// query's columns (numbered as that query's scope numbers them): the
// binder replaces it with a LateralFuncScan over those values before
// planning (sql/bind/srflateral.go); one left in a plan is an error.

// LateralFuncScan runs a set-returning function per row of Input, its
// arguments over Input's columns: Input's columns, then the function's
// (plan.LateralFuncScan).
type LateralFuncScan struct {
	Input Node
	Func  string
	Args  []expr.Expr
	Col   Column
	// Outer keeps a left row whose function gives no values, with a NULL
	// value (LEFT JOIN LATERAL unnest(t.a) ON true).
	Outer bool
}

func (n *LateralFuncScan) Schema() []Column {
	return append(append([]Column(nil), n.Input.Schema()...), n.Col)
}
func (n *LateralFuncScan) Children() []Node { return []Node{n.Input} }
