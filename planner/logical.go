// Package planner holds logical query plans, the rewrites applied to them,
// and their lowering to the physical plans that exec/ runs. Plans are
// immutable data: a rewrite returns a new tree.
package planner

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Column is one output column of a plan node.
type Column struct {
	Name  string
	T     types.T
	Table string // qualifier the column can be referenced by ("" if none)
}

// Node is a logical plan operator. Expressions inside a node refer to the
// columns of its input by index (for Join: left columns then right columns).
type Node interface {
	Schema() []Column
	Children() []Node
}

// Scan reads a stream's log or a view's rows.
type Scan struct {
	Table *storage.TableDef
	Alias string
	Cols  []Column
	// AsOf selects a snapshot for views (AS OF SAVEPOINT/CHECKPOINT); zero means live.
	AsOf AsOf
	// Reads, for a connector source read by a view, marks the columns
	// the view reads (MarkSourceReads; plan.ScanStream.Reads); nil:
	// every column.
	Reads []bool
}

// AsOf names a snapshot to read.
type AsOf struct {
	Savepoint  string
	Checkpoint uint64
}

// Values is a literal table (VALUES lists, SELECT without FROM).
type Values struct {
	Rows [][]expr.Expr
	Cols []Column
}

// Filter keeps rows where Pred is true.
type Filter struct {
	Input Node
	Pred  expr.Expr
}

// Project computes Exprs over its input.
type Project struct {
	Input Node
	Exprs []expr.Expr
	Cols  []Column
}

// AggFunc names an aggregate.
type AggFunc string

const (
	AggCountStar AggFunc = "count_star"
	AggCount     AggFunc = "count"
	AggSum       AggFunc = "sum"
	AggAvg       AggFunc = "avg"
	AggMin       AggFunc = "min"
	AggMax       AggFunc = "max"
	AggArrayAgg  AggFunc = "array_agg" // text → text[] (ARRAY(subquery))
	// The ordered-set aggregates: Arg is the ORDER BY expression.
	AggPercentileCont AggFunc = "percentile_cont" // double precision or interval → the same
	AggPercentileDisc AggFunc = "percentile_disc"
	AggMode           AggFunc = "mode"
)

// AggCall is one aggregate. Arg is nil for count(*). Result types follow
// PostgreSQL: count → bigint; sum(int) → bigint (numeric for bigint input);
// sum(float) → double; sum(numeric) → numeric; avg(int/numeric) → numeric,
// avg(float) → double; min/max → the argument's type.
type AggCall struct {
	Func     AggFunc
	Distinct bool
	Arg      expr.Expr
	T        types.T
	// Frac and Desc are an ordered-set aggregate's (plan.AggSpec's).
	Frac float64
	Desc bool
	// Sorted is a materialized view's array_agg, or one with ORDER BY or
	// DISTINCT inside the call; Order the directions of its ORDER BY keys,
	// which lead Arg's record (plan.AggSpec's).
	Sorted bool
	Order  []plan.AggOrder
}

// Aggregate groups its input. Output columns: one per GroupBy expression,
// then one per aggregate.
type Aggregate struct {
	Input   Node
	GroupBy []expr.Expr
	Aggs    []AggCall
	Cols    []Column
	// Window, if set, makes the grouping a time window over event time
	// (TUMBLE/HOP/SESSION); the window start/end are among GroupBy.
	Window *Window
}

// Window describes a windowed grouping.
type Window struct {
	Kind   string    // "tumble", "hop", "session"
	TimeOf expr.Expr // the event-time column
	Size   int64     // microseconds
	Slide  int64     // hop only
	Gap    int64     // session only
}

// JoinKind is the join type.
type JoinKind uint8

const (
	InnerJoin JoinKind = iota
	LeftJoin
	RightJoin
	FullJoin
	// SemiJoin keeps the left rows with a match (IN, EXISTS), AntiJoin
	// those without one (NOT EXISTS); both output the left columns only,
	// while On still sees left then right columns.
	SemiJoin
	AntiJoin
)

// Join combines two inputs; On is over left columns followed by right columns.
type Join struct {
	Left, Right Node
	Kind        JoinKind
	On          expr.Expr // nil: cross join
	Cols        []Column
	// Lookup marks a temporal (lookup) join, FOR SYSTEM_TIME AS OF
	// PROCTIME() (plan.HashJoin.Lookup): an inner or left join whose right
	// side is a keyed table. Join reordering keeps it as written.
	Lookup bool
	// Versioned marks an event-time temporal join, FOR SYSTEM_TIME AS OF
	// l.ts over a keyed table with a WATERMARK (plan.HashJoin.Versioned):
	// On is the equalities of the table's PRIMARY KEY, nothing else. Join
	// reordering and predicate moves keep it as written.
	Versioned *VersionedJoin
}

// VersionedJoin is a versioned join's time columns: ProbeTime among the
// left side's, BuildTime (the table's WATERMARK column) among the right's.
type VersionedJoin = plan.VersionedJoin

// SortKey is one ORDER BY term.
type SortKey struct {
	E          expr.Expr
	Desc       bool
	NullsFirst bool
}

// Sort orders its input.
type Sort struct {
	Input Node
	Keys  []SortKey
}

// Limit skips Offset rows then returns at most Count (Count < 0: no limit).
type Limit struct {
	Input  Node
	Offset int64
	Count  int64
}

// WinFuncKind is a window function.
type WinFuncKind uint8

const (
	WinRowNumber WinFuncKind = iota
	WinRank
	WinDenseRank
	WinAgg // Agg over the frame: the partition, or up to the current row's peers with ORDER BY
	WinLag
	WinLead
	WinFirstValue
	WinLastValue
	WinNthValue
)

// WinFunc is one window function call. The value functions' fields are
// plan.WindowFunc's (see there).
type WinFunc struct {
	Kind    WinFuncKind
	Agg     AggCall // WinAgg only
	T       types.T
	Arg     expr.Expr
	N       int64
	NNull   bool
	Default expr.Expr
	Frame   WinFrame
}

// WindowAgg computes window functions sharing one OVER clause. Output
// columns: the input's, then one per function.
type WindowAgg struct {
	Input       Node
	PartitionBy []expr.Expr
	OrderBy     []SortKey
	Funcs       []WinFunc
	Cols        []Column
}

// SingleRow is a scalar subquery's value: its input's one row, NULLs for
// none, an error (21000) for more.
type SingleRow struct {
	Input Node
}

// Hop puts each input row in its size/slide hopping windows (or its
// cumulating windows), one output row per window: Input's columns, then
// window_start and window_end (Cols). HOP(table, ts, slide, size) in
// FROM, GROUP BY HOP(ts, slide, size) and CUMULATE(table, ts, step, max)
// in FROM plan as one (exec/hop.go).
type Hop struct {
	Input       Node
	TS          expr.Expr // over Input: the rows' event time
	Slide, Size int64     // microseconds; Slide divides Size
	// Cumulate makes the windows CUMULATE(table, ts, step, max)'s: Slide
	// is the step, Size the max size.
	Cumulate bool
	Cols     []Column
}

// UnionAll concatenates inputs with the same column types.
type UnionAll struct {
	Inputs []Node
	Cols   []Column
}

func (n *Scan) Schema() []Column      { return n.Cols }
func (n *Values) Schema() []Column    { return n.Cols }
func (n *Filter) Schema() []Column    { return n.Input.Schema() }
func (n *Project) Schema() []Column   { return n.Cols }
func (n *Aggregate) Schema() []Column { return n.Cols }
func (n *Join) Schema() []Column      { return n.Cols }
func (n *Sort) Schema() []Column      { return n.Input.Schema() }
func (n *Limit) Schema() []Column     { return n.Input.Schema() }
func (n *UnionAll) Schema() []Column  { return n.Cols }
func (n *Hop) Schema() []Column       { return n.Cols }
func (n *WindowAgg) Schema() []Column { return n.Cols }
func (n *SingleRow) Schema() []Column { return n.Input.Schema() }

func (n *Scan) Children() []Node      { return nil }
func (n *Values) Children() []Node    { return nil }
func (n *Filter) Children() []Node    { return []Node{n.Input} }
func (n *Project) Children() []Node   { return []Node{n.Input} }
func (n *Aggregate) Children() []Node { return []Node{n.Input} }
func (n *Join) Children() []Node      { return []Node{n.Left, n.Right} }
func (n *Sort) Children() []Node      { return []Node{n.Input} }
func (n *Limit) Children() []Node     { return []Node{n.Input} }
func (n *UnionAll) Children() []Node  { return n.Inputs }
func (n *Hop) Children() []Node       { return []Node{n.Input} }
func (n *WindowAgg) Children() []Node { return []Node{n.Input} }
func (n *SingleRow) Children() []Node { return []Node{n.Input} }
