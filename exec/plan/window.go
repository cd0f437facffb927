package plan

import (
	"github.com/streamdb/streamdb/exec/over"
)

// overEnv is what the window kernels (exec/over) need of the query.
func (ctx *Ctx) OverEnv() *over.Env {
	env := &over.Env{Expr: ctx.Expr, Mem: ctx.Alloc(), Canceled: ctx.Canceled, Check: ctx.Check}
	if ctx.Mem != nil {
		env.Grow = ctx.Mem.Grow
	}
	return env
}
