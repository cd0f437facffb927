package planner

import (
	"strings"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Index selection: a filter directly over a materialized view (no AS OF:
// a snapshot need not hold the index) or a table that compares index columns with
// constants or parameters reads the view through the index that matches
// the longest prefix of its columns by equality (= or IN), plus a range
// (<, <=, >, >=, BETWEEN) on the column after that prefix. The filter
// stays above the scan and decides; the index only skips rows.

// IndexReader is implemented by the Snapshots of batch statements: only
// they read views through indexes (a view's job reads its inputs' rows
// and changes, never an index).
type IndexReader interface{ IndexReads() bool }

func readsIndexes(s Snapshots) bool {
	r, ok := s.(IndexReader)
	return ok && r.IndexReads()
}

// colBound is what the conjuncts of a filter say about one column.
type colBound struct {
	eq             []expr.Expr
	lo, hi         expr.Expr
	loIncl, hiIncl bool
	text           []string // the conjuncts used, for EXPLAIN
}

// chooseIndex returns the lookup a filter with pred over s can make, or nil.
func chooseIndex(s *Scan, pred expr.Expr) *plan.IndexLookup {
	if (s.Table.Kind != storage.KindView && s.Table.Kind != storage.KindStream) || s.AsOf != (AsOf{}) || len(s.Table.Indexes) == 0 ||
		len(s.Cols) != len(s.Table.Columns) {
		return nil
	}
	bounds := map[int]*colBound{}
	at := func(c int) *colBound {
		if bounds[c] == nil {
			bounds[c] = &colBound{}
		}
		return bounds[c]
	}
	for _, c := range conjuncts(pred) {
		switch c := c.(type) {
		case *expr.InList:
			col, ok := c.E.(*expr.ColRef)
			if !ok || c.Not || len(c.List) == 0 || at(col.Idx).eq != nil {
				continue
			}
			usable := true
			for _, v := range c.List {
				usable = usable && lookupValue(v) && sameIndexType(col.T, v.Type())
			}
			if usable {
				b := at(col.Idx)
				b.eq, b.text = c.List, append(b.text, c.String())
			}
		case *expr.Func:
			if len(c.Args) != 2 {
				continue
			}
			op := c.Name
			col, ok := c.Args[0].(*expr.ColRef)
			v := c.Args[1]
			if !ok {
				if col, ok = c.Args[1].(*expr.ColRef); !ok {
					continue
				}
				v = c.Args[0]
				op = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
			}
			if op == "" || !lookupValue(v) || !sameIndexType(col.T, v.Type()) {
				continue
			}
			b := at(col.Idx)
			switch {
			case op == "=" && b.eq == nil:
				b.eq = []expr.Expr{v}
			case (op == ">" || op == ">=") && b.lo == nil:
				b.lo, b.loIncl = v, op == ">="
			case (op == "<" || op == "<=") && b.hi == nil:
				b.hi, b.hiIncl = v, op == "<="
			default:
				continue
			}
			b.text = append(b.text, c.String())
		}
	}
	var best *plan.IndexLookup
	bestScore := 0
	for i := range s.Table.Indexes {
		ix := &s.Table.Indexes[i]
		l := &plan.IndexLookup{Index: ix}
		var used []string
		score := 0
		for _, c := range ix.Cols {
			b := bounds[c]
			if b == nil {
				break
			}
			if b.eq != nil {
				l.Eq = append(l.Eq, b.eq)
				used = append(used, b.text...)
				score += 2
				continue
			}
			if b.lo != nil || b.hi != nil {
				l.Lo, l.LoIncl, l.Hi, l.HiIncl = b.lo, b.loIncl, b.hi, b.hiIncl
				used = append(used, b.text...)
				score++
			}
			break
		}
		if score > bestScore {
			l.Desc = strings.Join(used, " AND ")
			best, bestScore = l, score
		}
	}
	return best
}

// lookupValue reports whether e is one value for the whole statement:
// literals and parameters, cast or negated.
func lookupValue(e expr.Expr) bool {
	switch e := e.(type) {
	case *expr.Const, *expr.Param:
		return true
	case *expr.Cast:
		return lookupValue(e.E)
	case *expr.Func:
		return e.Name == "neg" && len(e.Args) == 1 && lookupValue(e.Args[0])
	}
	return false
}

// sameIndexType reports whether a value of type v encodes as a value of
// index column type c does (exec.appendIndexDatum), so that the two
// compare as the column's values do.
func sameIndexType(c, v types.T) bool {
	class := func(t types.T) types.T {
		switch t.Kind {
		case types.Int16, types.Int32, types.Int64:
			return types.TInt64
		case types.Float32, types.Float64:
			return types.TFloat64
		case types.Text:
			return types.TText
		case types.Numeric:
			return types.T{Kind: types.Numeric, Scale: t.Scale}
		}
		return types.T{Kind: t.Kind, TZ: t.TZ}
	}
	return plan.IndexableType(c) && class(c) == class(v)
}
