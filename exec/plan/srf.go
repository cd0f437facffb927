package plan

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// FuncScan is a set-returning function in FROM: its arguments are
// evaluated once (constants and parameters: FROM items see no other
// columns), and its rows come in batches of srfBatch.
//
//	generate_series(start, stop [, step])  integers (the arguments' type),
//	                                       step 1 by default, 0 is 22023
//	generate_series(start, stop, step)     timestamps by an interval step
//	unnest(array)                          the elements of a text[]
//	jsonb_array_elements[_text](j)         the elements of a jsonb array
//	jsonb_each[_text](j)                   (key, value) records of a jsonb object
//
// A NULL argument gives no rows, as in PostgreSQL.
type FuncScan struct {
	Func string
	Args []expr.Expr
	T    types.T
}

func (p *FuncScan) Types() []types.T { return []types.T{p.T} }
