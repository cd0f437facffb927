package plan

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/session"
	"github.com/streamdb/streamdb/types"
)

// Session windows (GROUP BY keys, SESSION(ts, gap)): the operator is
// exec/session; here are the plan node, the batch query's loop and the
// wiring of a job's session node (its time bound, the watermark it keeps
// in the job's state).

// SessionAgg groups rows into session windows per Keys: a session is a
// maximal run of rows of a key whose Time values are less than Gap µs
// apart. Output: Keys, session start, session end (last time + Gap), Aggs.
type SessionAgg struct {
	In   Plan
	Keys []expr.Expr
	Time expr.Expr
	Gap  int64
	Aggs []AggSpec
}

func (p *SessionAgg) Types() []types.T { return SessionSpec(p).Types() }

// CheckSessionAggs refuses the aggregates a session window cannot merge.
func CheckSessionAggs(aggs []AggSpec) error { return session.CheckAggs(aggs) }

// SessionSpec is the operator's spec of p.
func SessionSpec(p *SessionAgg) *session.Spec {
	return &session.Spec{Keys: p.Keys, Time: p.Time, Gap: p.Gap, Aggs: p.Aggs}
}
