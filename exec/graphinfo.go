package exec

import (
	"fmt"
	"strings"
	"time"

	"github.com/streamdb/streamdb/exec/plan"
)

// OperatorInfo describes one node of a running job's graph, for monitoring
// (monitor/ draws it). It is a copy: holding it holds nothing of the job.
type OperatorInfo struct {
	ID          int    `json:"id"`
	Kind        string `json:"kind"`   // source, aggregate, join, rank, temporal, union, sink
	Detail      string `json:"detail"` // what it reads or computes, in SQL words
	Parallelism int    `json:"parallelism"`
	// Inputs are the IDs of the nodes feeding it, in input order.
	Inputs []int `json:"inputs"`
	// Stages names the stateless stages on each input edge ("filter,
	// project"), one entry per input ("" where there are none).
	Stages []string `json:"stages"`
	// Stateful operators: the id their state is stored under.
	StateOp int `json:"state_op"`
}

// Graph describes the job's operator graph: its nodes inputs first, then
// the sink, whose input is the graph's root.
func (j *Job) Graph() []OperatorInfo {
	ids := make(map[*gnode]int, len(j.g.nodes))
	for i, n := range j.g.nodes {
		ids[n] = i
	}
	out := make([]OperatorInfo, 0, len(j.g.nodes)+1)
	for i, n := range j.g.nodes {
		op := OperatorInfo{ID: i, Parallelism: n.par, StateOp: -1}
		switch n.kind {
		case nSource:
			op.Kind = "source"
			if n.changelog {
				op.Detail = n.src.Name + " (changelog)"
			} else {
				op.Detail = n.src.Name
			}
		case nAgg:
			op.Kind, op.StateOp = "aggregate", int(n.op)
			op.Detail = aggDetail(n.agg)
		case nJoin:
			op.Kind, op.StateOp = "join", int(n.op)
			op.Detail = joinDetail(n.join)
		case nRank:
			op.Kind, op.StateOp = "rank", int(n.op)
			op.Detail = rankDetail(n.rank)
		case nSession:
			op.Kind, op.StateOp = "session", int(n.op)
			op.Detail = sessionDetail(n.session)
		case nTemporal:
			op.Kind, op.StateOp = "temporal", int(n.op)
			op.Detail = n.temporal.Bound
		case nUnion:
			op.Kind, op.Detail = "union", fmt.Sprintf("%d inputs", len(n.ins))
		}
		for _, e := range n.ins {
			op.Inputs = append(op.Inputs, ids[e.from])
			op.Stages = append(op.Stages, stageNames(e.stages))
		}
		out = append(out, op)
	}
	sink := OperatorInfo{ID: len(out), Kind: "sink", Parallelism: 1, StateOp: -1, Detail: "change stream"}
	if j.spec.View != nil {
		sink.Detail = "view " + j.spec.View.Name
	}
	if r := j.g.root; r != nil {
		sink.Inputs = []int{ids[r.from]}
		sink.Stages = []string{stageNames(r.stages)}
	}
	return append(out, sink)
}

func stageNames(stages []plan.Plan) string {
	var names []string
	for _, s := range stages {
		switch s := s.(type) {
		case *plan.Filter:
			names = append(names, "filter")
		case *plan.Project:
			names = append(names, "project")
		case *plan.Hop:
			names = append(names, s.Name())
		case *plan.LateralFuncScan:
			names = append(names, s.Func)
		}
	}
	return strings.Join(names, ", ")
}

var aggNames = map[plan.AggKind]string{plan.AggCountStar: "count(*)", plan.AggCount: "count", plan.AggSum: "sum", plan.AggAvg: "avg", plan.AggMin: "min", plan.AggMax: "max", plan.AggArrayAgg: "array_agg",
	plan.AggPercentileCont: "percentile_cont", plan.AggPercentileDisc: "percentile_disc", plan.AggMode: "mode"}

func aggDetail(a *plan.HashAgg) string {
	fns := make([]string, 0, len(a.Aggs))
	for _, s := range a.Aggs {
		f := aggNames[s.Kind]
		if s.Distinct {
			f += "(DISTINCT)"
		}
		fns = append(fns, f)
	}
	by := "global"
	if len(a.Keys) > 0 {
		by = fmt.Sprintf("by %d key(s)", len(a.Keys))
	}
	return by + ": " + strings.Join(fns, ", ")
}

func sessionDetail(s *plan.SessionAgg) string {
	fns := make([]string, 0, len(s.Aggs))
	for _, a := range s.Aggs {
		fns = append(fns, aggNames[a.Kind])
	}
	return fmt.Sprintf("gap %s, by %d key(s): %s", time.Duration(s.Gap)*time.Microsecond, len(s.Keys), strings.Join(fns, ", "))
}

var joinNames = map[plan.JoinKind]string{plan.JoinInner: "inner", plan.JoinLeft: "left", plan.JoinRight: "right", plan.JoinFull: "full", plan.JoinSemi: "semi", plan.JoinAnti: "anti"}

func joinDetail(h *plan.HashJoin) string {
	if h.Lookup {
		return fmt.Sprintf("%s lookup on %d key(s)", joinNames[h.Kind], len(h.LeftKeys))
	}
	if len(h.LeftKeys) == 0 {
		return joinNames[h.Kind] + ", nested loop"
	}
	return fmt.Sprintf("%s on %d key(s)", joinNames[h.Kind], len(h.LeftKeys))
}

func rankDetail(r *rankSpec) string {
	if r.window != nil {
		return fmt.Sprintf("window functions, %d partition key(s)", len(r.partition))
	}
	if r.hi < 0 {
		return fmt.Sprintf("ORDER BY ... OFFSET %d", r.lo)
	}
	return fmt.Sprintf("top %d (ORDER BY ... LIMIT)", r.hi-r.lo)
}
