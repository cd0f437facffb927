// Package plan holds what batch execution (exec/batch) and the streaming
// runtime (exec) share beneath them, so that neither imports the other:
//
//   - the physical plan nodes the planner builds (ScanStream, ScanView,
//     Filter, Project, HashAgg, HashJoin, Sort, Limit, Window, the nodes of
//     set-returning functions, HOP/CUMULATE and SESSION), immutable data,
//     and the specs the operator families are built from;
//   - Ctx, what running a plan needs (context, database, expression
//     context, memory budget, snapshot), with the query memory budget and
//     the process memory split (budget.go, procmem.go);
//   - reading what is stored: a view's rows (ReadView, which a
//     view-on-view source and a sink's snapshot read too), keyed tables'
//     rows and changes (KeyedRows), index ranges and entries (index.go),
//     log blocks of the old layout; the connector factory and CheckBounded;
//     failpoints for tests.
//
// It imports neither exec nor exec/batch (TestBatchApartFromRuntime in
// tests/lint).
package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/join"
	"github.com/streamdb/streamdb/exec/over"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Plan is a physical plan node. Plans are immutable data built by planner/.
type Plan interface {
	// Types are the output column types.
	Types() []types.T
}

// ScanStream reads a stream's log (all partitions, in offset order per partition).
type ScanStream struct {
	Table *storage.TableDef
	Snap  storage.Reader // nil: the statement's snapshot
	// Rows, for a keyed table, are its rows as a write holding its lock
	// has them (UseKeyedRows); nil: net the log.
	Rows *KeyedRows
	// History, for a keyed table, reads every row it has inserted or
	// updated to (its versions) instead of its current rows: the build
	// side of a versioned join in a batch query.
	History bool
	// Index, if set, reads only the rows a lookup of one of the table's
	// indexes finds, and the log's rows past its mark (tableindex.go).
	Index *IndexLookup
	// Reads, for a connector source a job reads, marks the columns its
	// plan reads (planner.MarkSourceReads); the job's connector leaves
	// the others NULL (connector.Projector). nil: every column.
	Reads []bool
}

// ScanView reads a materialized view's rows at the last completed checkpoint
// (or at a snapshot given by Snap).
type ScanView struct {
	View *storage.TableDef
	Snap storage.Reader // nil: the live database
	// Index, if set, reads only the rows an index lookup finds (index.go).
	Index *IndexLookup
}

// Batches yields record batches computed in advance (system tables).
// Run releases them.
type Batches struct {
	Recs []arrow.RecordBatch
	Ts   []types.T
}

// Values is a literal table.
type Values struct {
	Rows [][]expr.Expr
	Ts   []types.T
}

// Filter keeps rows where Pred is true.
type Filter struct {
	In   Plan
	Pred expr.Expr
}

// Project computes expressions.
type Project struct {
	In    Plan
	Exprs []expr.Expr
}

// AggKind is an aggregate function; AggSpec is one aggregate over an
// argument expression (nil for count(*)). Both live with the accumulators
// (exec/accum).
type (
	AggKind  = accum.Kind
	AggSpec  = accum.Spec
	AggOrder = accum.OrderDir
)

const (
	AggCountStar      = accum.CountStar
	AggCount          = accum.Count
	AggSum            = accum.Sum
	AggAvg            = accum.Avg
	AggMin            = accum.Min
	AggMax            = accum.Max
	AggArrayAgg       = accum.ArrayAgg
	AggPercentileCont = accum.PercentileCont
	AggPercentileDisc = accum.PercentileDisc
	AggMode           = accum.Mode
)

// HashAgg groups by Keys and computes Aggs; output is keys then aggregates.
type HashAgg struct {
	In   Plan
	Keys []expr.Expr
	Aggs []AggSpec
}

// JoinKind is the kind of join (join.Kind).
type JoinKind = join.Kind

const (
	JoinInner = join.Inner
	JoinLeft  = join.Left
	JoinRight = join.Right
	JoinFull  = join.Full
	JoinSemi  = join.Semi
	JoinAnti  = join.Anti
)

// HashJoin joins on LeftKeys[i] = RightKeys[i] (no keys: nested loop), then
// applies Residual over the joined row (left columns then right columns).
// Outer joins pad the unmatched side with NULLs.
type HashJoin struct {
	Left, Right         Plan
	Kind                JoinKind
	LeftKeys, RightKeys []expr.Expr
	Residual            expr.Expr
	// Lookup makes it a temporal (lookup) join, FOR SYSTEM_TIME AS OF
	// PROCTIME(), inner or left, whose right side is a keyed table's
	// changelog. A batch query runs it as any join (over the table's
	// current rows). A continuous query keeps only the right side's rows
	// in state; each left row (the left side only inserts) is joined with
	// the right rows the job has read by the barrier that ends its epoch,
	// and a later change of the right side changes nothing already
	// emitted (lookupjoin.go).
	Lookup bool
	// Versioned makes it an event-time temporal join, FOR SYSTEM_TIME AS
	// OF l.ts over a keyed table with a WATERMARK (versioned.go): inner or
	// left, the keys the table's PRIMARY KEY, no residual.
	Versioned *VersionedJoin
}

// VersionedJoin is the time columns of a versioned join: ProbeTime of the
// left side, BuildTime (the table's WATERMARK column) of the right.
type VersionedJoin struct {
	ProbeTime, BuildTime int
}

// SortKey is one sort term over the input's columns (exec/over, which
// sorts a window's rows by it too).
type SortKey = over.SortKey

// Sort orders its input; Limit >= 0 keeps only the first Limit rows (top-N).
type Sort struct {
	In    Plan
	Keys  []SortKey
	Limit int64
}

// Limit skips Offset rows and passes at most Count (Count < 0: all).
type Limit struct {
	In            Plan
	Offset, Count int64
}

// A window function, its kind and frame are exec/over's, whose kernels
// compute them (the names here are the ones the planner uses).
type (
	WindowFuncKind = over.FuncKind
	WindowFunc     = over.Func
	WindowFrame    = over.Frame
	FrameBound     = over.FrameBound
	FrameBoundKind = over.FrameBoundKind
)

const (
	WinRowNumber  = over.RowNumber
	WinRank       = over.Rank
	WinDenseRank  = over.DenseRank
	WinAgg        = over.Agg
	WinLag        = over.Lag
	WinLead       = over.Lead
	WinFirstValue = over.FirstValue
	WinLastValue  = over.LastValue
	WinNthValue   = over.NthValue

	BoundUnboundedPreceding = over.BoundUnboundedPreceding
	BoundPreceding          = over.BoundPreceding
	BoundCurrentRow         = over.BoundCurrentRow
	BoundFollowing          = over.BoundFollowing
	BoundUnboundedFollowing = over.BoundUnboundedFollowing
)

// DefaultFrame is PostgreSQL's default frame (over.DefaultFrame).
var DefaultFrame = over.DefaultFrame

// Window computes window functions over the partitions of its input. The
// output is the input's columns, then one column per function. All of a
// node's functions share PartitionBy and OrderBy; different OVER clauses are
// stacked Window nodes.
type Window struct {
	In          Plan
	PartitionBy []expr.Expr
	OrderBy     []SortKey
	Funcs       []WindowFunc
}

// SingleRow is the value of a scalar subquery: its input's one row, a row
// of NULLs when the input is empty, and error 21000 when it has more than
// one row. It is the right side of a cross join with the outer query.
type SingleRow struct {
	In Plan
}

// Union concatenates inputs of the same types.
type Union struct {
	Ins []Plan
}

func (p *ScanStream) Types() []types.T { return ColumnTypes(p.Table) }

func (p *ScanView) Types() []types.T { return ColumnTypes(p.View) }

func (p *Values) Types() []types.T { return p.Ts }

func (p *Batches) Types() []types.T { return p.Ts }

func (p *Filter) Types() []types.T { return p.In.Types() }

func (p *Project) Types() []types.T { return ExprTypes(p.Exprs) }

func (p *HashAgg) Types() []types.T {
	ts := ExprTypes(p.Keys)
	for _, a := range p.Aggs {
		ts = append(ts, a.T)
	}
	return ts
}

func (p *HashJoin) Types() []types.T {
	if p.Kind == JoinSemi || p.Kind == JoinAnti {
		return p.Left.Types()
	}
	return append(append([]types.T(nil), p.Left.Types()...), p.Right.Types()...)
}

func (p *Window) Types() []types.T {
	ts := append([]types.T(nil), p.In.Types()...)
	for _, f := range p.Funcs {
		ts = append(ts, f.T)
	}
	return ts
}

func (p *SingleRow) Types() []types.T { return p.In.Types() }

func (p *Sort) Types() []types.T { return p.In.Types() }

func (p *Limit) Types() []types.T { return p.In.Types() }

func (p *Union) Types() []types.T { return p.Ins[0].Types() }

func ColumnTypes(t *storage.TableDef) []types.T {
	ts := make([]types.T, len(t.Columns))
	for i, c := range t.Columns {
		ts[i] = c.Type
	}
	return ts
}

func ExprTypes(es []expr.Expr) []types.T { return expr.Types(es) }

// StreamsRead returns the streams a batch plan scans (each once).
func StreamsRead(p Plan) []*storage.TableDef {
	var out []*storage.TableDef
	seen := map[uint64]bool{}
	for _, s := range streamScans(p) {
		if !seen[s.Table.ID] {
			seen[s.Table.ID] = true
			out = append(out, s.Table)
		}
	}
	return out
}

// streamScans returns the plan's stream scans.
func streamScans(p Plan) []*ScanStream {
	var out []*ScanStream
	WalkPlan(p, func(p Plan) {
		if s, ok := p.(*ScanStream); ok {
			out = append(out, s)
		}
	})
	return out
}

// ViewScans returns the plan's scans of views at the statement's snapshot
// (not AS OF one of their own).
func ViewScans(p Plan) []*ScanView {
	var out []*ScanView
	WalkPlan(p, func(p Plan) {
		if s, ok := p.(*ScanView); ok && s.Snap == nil {
			out = append(out, s)
		}
	})
	return out
}

// ReadStreamsFrom makes the plan read the streams for which from says so
// from r rather than from the statement's snapshot.
func ReadStreamsFrom(p Plan, r storage.Reader, from func(table uint64) bool) {
	for _, s := range streamScans(p) {
		if from(s.Table.ID) {
			s.Snap = r
		}
	}
}

// WalkPlan calls fn with p and every plan below it.
func WalkPlan(p Plan, fn func(Plan)) {
	fn(p)
	for _, in := range planInputs(p) {
		WalkPlan(in, fn)
	}
}
