package bind

import (
	"fmt"
	"strings"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
)

// Format prints a plan as an indented tree, one node per line, for tests
// and EXPLAIN.
func Format(n planner.Node) string {
	var b strings.Builder
	format(&b, n, 0)
	return b.String()
}

func format(b *strings.Builder, n planner.Node, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	switch n := n.(type) {
	case *planner.Scan:
		fmt.Fprintf(b, "Scan %s", n.Table.Name)
		if n.Alias != n.Table.Name {
			fmt.Fprintf(b, " AS %s", n.Alias)
		}
		if n.AsOf.Savepoint != "" {
			fmt.Fprintf(b, " AS OF SAVEPOINT %s", n.AsOf.Savepoint)
		}
		if n.AsOf.Checkpoint != 0 {
			fmt.Fprintf(b, " AS OF CHECKPOINT %d", n.AsOf.Checkpoint)
		}
		fmt.Fprintf(b, " %s", cols(n.Cols))
	case *planner.Values:
		rows := make([]string, len(n.Rows))
		for i, r := range n.Rows {
			rows[i] = "(" + exprs(r) + ")"
		}
		fmt.Fprintf(b, "Values %s %s", cols(n.Cols), strings.Join(rows, ", "))
	case *planner.Filter:
		fmt.Fprintf(b, "Filter %s", n.Pred)
	case *planner.Project:
		parts := make([]string, len(n.Exprs))
		for i, e := range n.Exprs {
			parts[i] = fmt.Sprintf("%s:%s=%s", n.Cols[i].Name, n.Cols[i].T, e)
		}
		fmt.Fprintf(b, "Project %s", strings.Join(parts, ", "))
	case *planner.Aggregate:
		aggs := make([]string, len(n.Aggs))
		for i, a := range n.Aggs {
			arg := "*"
			if a.Arg != nil {
				arg = a.Arg.String()
			}
			if a.Distinct {
				arg = "DISTINCT " + arg
			}
			aggs[i] = fmt.Sprintf("%s(%s):%s", a.Func, arg, a.T)
		}
		fmt.Fprintf(b, "Aggregate group=[%s] aggs=[%s]", exprs(n.GroupBy), strings.Join(aggs, ", "))
	case *planner.Join:
		kind := [...]string{"inner", "left", "right", "full", "semi", "anti"}[n.Kind]
		if n.Lookup {
			kind += " lookup"
		}
		if n.On == nil {
			fmt.Fprintf(b, "Join %s", kind)
		} else {
			fmt.Fprintf(b, "Join %s on %s", kind, n.On)
		}
	case *planner.Sort:
		keys := make([]string, len(n.Keys))
		for i, k := range n.Keys {
			keys[i] = k.E.String()
			if k.Desc {
				keys[i] += " DESC"
			}
			if k.NullsFirst {
				keys[i] += " NULLS FIRST"
			} else {
				keys[i] += " NULLS LAST"
			}
		}
		fmt.Fprintf(b, "Sort %s", strings.Join(keys, ", "))
	case *planner.Limit:
		fmt.Fprintf(b, "Limit offset=%d count=%d", n.Offset, n.Count)
	case *planner.UnionAll:
		fmt.Fprintf(b, "UnionAll %s", cols(n.Cols))
	case *planner.Hop:
		if n.Cumulate {
			fmt.Fprintf(b, "Cumulate time=%s step=%dus max=%dus %s", n.TS, n.Slide, n.Size, cols(n.Cols))
		} else {
			fmt.Fprintf(b, "Hop time=%s slide=%dus size=%dus %s", n.TS, n.Slide, n.Size, cols(n.Cols))
		}
	case *planner.WindowAgg:
		keys := make([]string, len(n.OrderBy))
		for i, k := range n.OrderBy {
			keys[i] = k.E.String()
			if k.Desc {
				keys[i] += " DESC"
			}
		}
		funcs := make([]string, len(n.Funcs))
		for i, f := range n.Funcs {
			switch f.Kind {
			case planner.WinRowNumber:
				funcs[i] = "row_number()"
			case planner.WinRank:
				funcs[i] = "rank()"
			case planner.WinDenseRank:
				funcs[i] = "dense_rank()"
			case planner.WinLag, planner.WinLead, planner.WinFirstValue, planner.WinLastValue, planner.WinNthValue:
				funcs[i] = valueFuncName[f.Kind] + "(" + f.Arg.String() + ")"
			default:
				arg := "*"
				if f.Agg.Arg != nil {
					arg = f.Agg.Arg.String()
				}
				funcs[i] = fmt.Sprintf("%s(%s)", f.Agg.Func, arg)
			}
			funcs[i] += ":" + f.T.String()
		}
		fmt.Fprintf(b, "Window partition=[%s] order=[%s] funcs=[%s]", exprs(n.PartitionBy), strings.Join(keys, ", "), strings.Join(funcs, ", "))
	case *planner.SingleRow:
		b.WriteString("SingleRow")
	default:
		b.WriteString("(unknown plan node)")
	}
	b.WriteByte('\n')
	for _, c := range n.Children() {
		format(b, c, depth+1)
	}
}

func cols(cs []planner.Column) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = qualName(c) + ":" + c.T.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func exprs(es []expr.Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}
