package exec

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/exec/temporal"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// A temporal filter is a continuous query's WHERE conjunct that compares a
// row's time with now(): ts > now() - INTERVAL '1' HOUR (also >=, and the
// mirrored now() - INTERVAL '1' HOUR < ts). A row passes while processing
// time is before its deadline (ts + 1 hour) and leaves the view once it is
// not: a temporal node keeps the rows it passed ordered by deadline and
// retracts them at the first barrier past it. Only lower bounds on the
// row's time are temporal filters: an upper bound (ts < now()) would make
// rows enter the view as time passes, which nothing would trigger, so it is
// refused, as is now() anywhere else in a continuous query (its value
// would be the job's start time, frozen).

// temporalSpec is a temporal node: Filter is the WHERE it came from (its
// other conjuncts run as a stage below the node), Deadline computes, over
// the node's input rows, the time (µs) from which a row is out of the view
// once Inclusive is false; with Inclusive (>=) the row is still in at the
// deadline itself.
type temporalSpec struct {
	Filter    *plan.Filter
	Deadline  expr.Expr
	Inclusive bool
	Bound     string // the conjunct, for plans and fingerprints
}

// hasNow says e calls now().
func hasNow(e expr.Expr) bool {
	switch x := e.(type) {
	case *expr.Func:
		if x.Name == "now" {
			return true
		}
		for _, a := range x.Args {
			if hasNow(a) {
				return true
			}
		}
	case *expr.Cast:
		return hasNow(x.E)
	case *expr.Case:
		for _, w := range x.Whens {
			if hasNow(w.Cond) || hasNow(w.Then) {
				return true
			}
		}
		return x.Else != nil && hasNow(x.Else)
	case *expr.InList:
		if hasNow(x.E) {
			return true
		}
		for _, a := range x.List {
			if hasNow(a) {
				return true
			}
		}
	}
	return false
}

// errNowInView is the refusal of now() outside a temporal filter.
func errNowInView() error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "now() in a materialized view or change stream is only supported in a temporal filter, a WHERE conjunct of the form ts > now() - INTERVAL '1' HOUR (or >=): rows leave the view as time passes")
}

// refuseNow refuses now() in expressions a continuous query would
// evaluate once, at the job's start.
func refuseNow(es ...expr.Expr) error {
	for _, e := range es {
		if e != nil && hasNow(e) {
			return errNowInView()
		}
	}
	return nil
}

// splitTemporal finds the temporal conjunct of pred (which calls now()) and
// returns it as a spec and the other conjuncts (nil when there are none).
func splitTemporal(f *plan.Filter) (*temporalSpec, expr.Expr, error) {
	var spec *temporalSpec
	var rest expr.Expr
	for _, cj := range conjuncts(f.Pred) {
		if !hasNow(cj) {
			if rest == nil {
				rest = cj
			} else {
				rest = &expr.Func{Name: "and", Args: []expr.Expr{rest, cj}, T: types.TBool}
			}
			continue
		}
		s, err := temporalConjunct(cj)
		if err != nil {
			return nil, nil, err
		}
		if spec != nil {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "a continuous query supports one temporal filter (a comparison with now()) per WHERE; combine them into one")
		}
		s.Filter = f
		spec = s
	}
	return spec, rest, nil
}

// temporalConjunct reads e OP now() [± interval] with OP > or >= (or the
// mirrored form) into a deadline over e.
func temporalConjunct(cj expr.Expr) (*temporalSpec, error) {
	f, ok := cj.(*expr.Func)
	if !ok || len(f.Args) != 2 {
		return nil, errNowInView()
	}
	a, b, op := f.Args[0], f.Args[1], f.Name
	if hasNow(a) { // now() ... < ts: mirror it
		a, b = b, a
		op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}[op]
	}
	if hasNow(a) || a.Type().Kind != types.Timestamp {
		return nil, errNowInView()
	}
	switch op {
	case ">", ">=":
	case "<", "<=":
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a temporal filter must bound the row's time from below (ts > now() - INTERVAL '1' HOUR): with an upper bound (ts < now()) rows would enter the view as time passes")
	default:
		return nil, errNowInView()
	}
	// b is now(), now() - c or now() + c with c a constant interval.
	deadline := a
	switch x := b.(type) {
	case *expr.Func:
		if x.Name == "now" {
			break
		}
		if (x.Name != "-" && x.Name != "+") || len(x.Args) != 2 {
			return nil, errNowInView()
		}
		n, ok := x.Args[0].(*expr.Func)
		c := x.Args[1]
		if !ok || n.Name != "now" || hasNow(c) || !expr.IsConst(c) || c.Type().Kind != types.Interval {
			return nil, errNowInView()
		}
		d, err := expr.EvalConst(&expr.Ctx{Mem: memoryPool}, c)
		if err != nil {
			return nil, err
		}
		if d.Null {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the interval of a temporal filter must not be NULL")
		}
		// ts > now() - c  <=>  now() < ts + c; ts > now() + c  <=>  now() < ts - c.
		name := "+"
		if x.Name == "+" {
			name = "-"
		}
		deadline = &expr.Func{Name: name, Args: []expr.Expr{a, &expr.Const{D: d, T: c.Type()}}, T: types.TTimestamp}
	default:
		return nil, errNowInView()
	}
	return &temporalSpec{Deadline: deadline, Inclusive: op == ">=", Bound: cj.String()}, nil
}

// temporalOp makes a temporal node's instance (the runtime's hook): out
// takes its rows; a durable job's restores its rows.
func (f opFactory) temporalOp(n *gnode, out *outlet, reemit bool) (*temporal.Op, error) {
	j := f.j
	spec := temporal.Spec{Deadline: n.temporal.Deadline, Inclusive: n.temporal.Inclusive}
	ts := n.ins[0].from.outTypes(n.ins[0])
	if !j.durable() {
		return temporal.New(spec, ts, out, nil), nil
	}
	op := temporal.New(spec, ts, out, f.opState(n.op, 0, 1))
	if err := op.Load(reemit); err != nil {
		return nil, err
	}
	return op, nil
}
