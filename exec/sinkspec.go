package exec

import (
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/connector/kafka"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
)

// The runtime's side of CREATE SINK: a sink's spec from the catalog and
// the view's plan, and the connector it drives (connector/kafka; the
// two-phase commit is twophase.go).

// SinkSpec describes a running sink.
type SinkSpec struct {
	Def  *storage.SinkDef
	View *storage.TableDef
	// KeyCols are the view's key columns (SinkKeyCols; none: the row).
	KeyCols []int
	// AtLeastOnce writes without transactions (checkpoint.mode =
	// 'at_least_once' when the sink was created).
	AtLeastOnce bool
}

// CheckKafkaSink validates a sink's WITH options against its view (22023
// for a bad option, 0A000 for format 'json' over a view that retracts) and
// that the topic exists (42704) on reachable brokers (08000).
func CheckKafkaSink(opts map[string]string, view *storage.TableDef, viewPlan plan.Plan) error {
	return kafka.CheckSink(opts, view.Name, AppendOnly(viewPlan))
}

// StartKafkaSink starts a sink; it runs until Stop.
func StartKafkaSink(db *storage.DB, spec SinkSpec) (*SinkRunner, error) {
	def, view := spec.Def, spec.View
	k, err := kafka.NewSink(connector.SinkSpec{Name: def.Name, ID: def.ID, View: view.Name, Columns: plan.ConnectorColumns(view),
		KeyCols: spec.KeyCols, AtLeastOnce: spec.AtLeastOnce, Options: def.Options,
		StoredPosition: func() (uint64, bool, error) { return db.State().LoadOffset(def.ID, view.ID, 0) }})
	if err != nil {
		return nil, err
	}
	return StartSinkRunner(db, def, view, k), nil
}

// SinkKeyCols returns the view's key columns for a sink's record keys:
// the catalog's key, else, for a view over a grouping, its output columns
// that are the group keys; none (the whole row) otherwise.
func SinkKeyCols(view *storage.TableDef, p plan.Plan) []int {
	if len(view.KeyCols) > 0 {
		return view.KeyCols
	}
	var proj *plan.Project
	if pr, ok := p.(*plan.Project); ok {
		proj, p = pr, pr.In
	}
	for {
		f, ok := p.(*plan.Filter) // HAVING
		if !ok {
			break
		}
		p = f.In
	}
	agg, ok := p.(*plan.HashAgg)
	if !ok || len(agg.Keys) == 0 {
		return nil
	}
	if proj == nil {
		out := make([]int, len(agg.Keys))
		for i := range out {
			out[i] = i
		}
		return out
	}
	var out []int
	for i, e := range proj.Exprs {
		if c, ok := e.(*expr.ColRef); ok && c.Idx < len(agg.Keys) {
			out = append(out, i)
		}
	}
	if len(out) < len(agg.Keys) {
		return nil // a group key not in the output: the whole row is the key
	}
	return out
}

// AppendOnly reports whether a plan's output only ever inserts rows, as a
// continuous query runs it (compile's retracts flags, graph.go): scans of
// streams without a key and of sources, under filters without now(),
// projections, HOP and ORDER BY without a limit; inner joins and unions of
// append-only inputs; lookup joins of an append-only left side. Aggregates,
// top-N, outer joins, temporal filters and reads of views retract.
func AppendOnly(p plan.Plan) bool {
	switch n := p.(type) {
	case *plan.ScanStream:
		return n.Table.Kind == storage.KindStream && !plan.Keyed(n.Table) || n.Table.Kind == storage.KindSource
	case *plan.Filter:
		return !hasNow(n.Pred) && AppendOnly(n.In)
	case *plan.Project:
		return AppendOnly(n.In)
	case *plan.Hop:
		return AppendOnly(n.In)
	case *plan.Sort:
		return n.Limit < 0 && AppendOnly(n.In)
	case *plan.HashJoin:
		if n.Lookup {
			return (n.Kind == plan.JoinInner || n.Kind == plan.JoinLeft) && AppendOnly(n.Left)
		}
		return n.Kind == plan.JoinInner && AppendOnly(n.Left) && AppendOnly(n.Right)
	case *plan.Union:
		for _, in := range n.Ins {
			if !AppendOnly(in) {
				return false
			}
		}
		return true
	}
	return false
}
