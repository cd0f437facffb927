package parse

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/types"
)

// Statement is one parsed statement: *Query or one of streamdb's own
// statement types below.
type Statement interface{ stmt() }

// Query is a statement the TiDB parser parsed (SELECT, INSERT, UNION,
// EXPLAIN, BEGIN/COMMIT/ROLLBACK, DROP TABLE, SHOW TABLES, ...), after the
// dialect layer rewrote the Postgres forms TiDB lacks into forms it accepts:
//
//	x::T, CAST(x AS T)        → pg_cast(x, 'T')        (T normalized, e.g. 'bigint', 'numeric(10,2)')
//	INTERVAL '5 minutes'      → pg_interval('5 minutes')
//	INTERVAL '10' SECOND      → pg_interval('10 second')  (also INTERVAL 10 SECOND)
//	v AS OF SAVEPOINT sp      → v AS OF TIMESTAMP pg_asof_savepoint('sp')
//	v AS OF CHECKPOINT 42     → v AS OF TIMESTAMP pg_asof_checkpoint(42)
//	... EMIT CHANGES          → removed; EmitChanges set
//	... EMIT ON WINDOW CLOSE  → removed; EmitOnWindowClose set (a materialized view's query only)
//	$$dollar$$ / E'..' quotes → ordinary '..' literals
type Query struct {
	Node        ast.StmtNode
	SQL         string // the user's text of this statement
	Rewritten   string // the text given to TiDB
	EmitChanges bool
	// EmitOnWindowClose makes a materialized view emit each window's row
	// once, when the watermark closes the window; its stored query keeps it.
	EmitOnWindowClose bool
	// LimitParams maps the byte offset in Rewritten of each "?" marker
	// (TiDB's ParamMarkerExpr.Offset) to the index of the parameter $N it
	// stands for: LIMIT $1 / OFFSET $2, where TiDB takes no expression.
	LimitParams map[int]int
	// OnConflict is an INSERT's ON CONFLICT clause (dml.go), nil if none.
	OnConflict *OnConflict
	// Returning is an INSERT, UPDATE or DELETE's RETURNING list, parsed
	// as SELECT <list> (dml.go); nil if none.
	Returning *ast.SelectStmt
}

// ColumnDef is a column in CREATE TABLE.
type ColumnDef struct {
	Name    string
	Type    types.T
	NotNull bool
	Default string // DEFAULT's expression as written; "" for none (defaults.go)
}

// CreateTable is CREATE TABLE [IF NOT EXISTS] name (cols..., [WATERMARK FOR c AS c - INTERVAL ...]) [WITH (k = v, ...)].
type CreateTable struct {
	Name        string
	IfNotExists bool
	Columns     []ColumnDef
	// Watermark: column and delay (microseconds); WatermarkSQL is the clause text.
	WatermarkCol string
	WatermarkUS  int64
	WatermarkSQL string
	With         map[string]string
	SQL          string
	// PrimaryKey names the key's columns (dml.go); nil: an append-only stream.
	PrimaryKey []string
}

// CreateSink is CREATE SINK [IF NOT EXISTS] name FROM view WITH (k = v, ...).
type CreateSink struct {
	Name        string
	From        string
	IfNotExists bool
	With        map[string]string
}

// DropSink is DROP SINK [IF EXISTS] name.
type DropSink struct {
	Name     string
	IfExists bool
}

// CreateSource is CREATE SOURCE [IF NOT EXISTS] name (cols..., [WATERMARK FOR ...])
// WITH (connector = '...', ...): CREATE TABLE's form, whose WITH options
// go to the connector.
type CreateSource struct {
	CreateTable
}

// CreateView is CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] name AS query
// [FROM SAVEPOINT sp] [WITH (k = v, ...)].
type CreateView struct {
	Name          string
	OrReplace     bool
	IfNotExists   bool
	Query         *Query
	FromSavepoint string
	With          map[string]string
	SQL           string
}

// ObjectKind names what a DROP or SHOW CREATE is about.
type ObjectKind string

const (
	ObjTable     ObjectKind = "table"
	ObjView      ObjectKind = "materialized view"
	ObjSavepoint ObjectKind = "savepoint"
	ObjSource    ObjectKind = "source"
)

// Drop is DROP TABLE | MATERIALIZED VIEW | SAVEPOINT [IF EXISTS] names [CASCADE|RESTRICT].
type Drop struct {
	Kind     ObjectKind
	Names    []string
	IfExists bool
	Cascade  bool
}

// Copy is COPY t [(cols)] FROM STDIN [WITH] [(opts)] or COPY t|(query) TO STDOUT [(opts)].
// Options: format (text|csv), header (bool), delimiter, null, quote, escape.
type Copy struct {
	Table   string
	Columns []string
	Query   *Query // COPY (query) TO STDOUT
	From    bool   // FROM STDIN (else TO STDOUT)
	Options map[string]string
}

// Set is SET [SESSION|LOCAL] name {=|TO} value[, ...] | SET name TO DEFAULT |
// SET TIME ZONE value. Name is lower-cased and may be dotted
// (checkpoint.interval). Value is the literal's text without quotes
// (several values are joined with ", "); Default is set for DEFAULT.
type Set struct {
	Name    string
	Value   string
	Default bool
	// Local is SET LOCAL: until the end of the transaction block.
	Local bool
}

// Show is SHOW name | SHOW ALL (Name "all").
type Show struct{ Name string }

// Reset is RESET name | RESET ALL (Name "all").
type Reset struct{ Name string }

// ShowObjects is SHOW TABLES | MATERIALIZED VIEWS | JOBS | CHECKPOINTS | SAVEPOINTS.
type ShowObjects struct{ What string } // "tables", "materialized views", "jobs", "checkpoints", "savepoints"

// ShowCreate is SHOW CREATE TABLE name | SHOW CREATE MATERIALIZED VIEW name.
type ShowCreate struct {
	Kind ObjectKind
	Name string
}

// Checkpoint is CHECKPOINT.
type Checkpoint struct{}

// AlterCluster is ALTER CLUSTER REBALANCE.
type AlterCluster struct{ Rebalance bool }

// CreateSavepoint is CREATE SAVEPOINT name [FOR view[, view...]].
type CreateSavepoint struct {
	Name  string
	Views []string
}

// Restore is RESTORE [view] FROM SAVEPOINT name | RESTORE view FROM CHECKPOINT id.
type Restore struct {
	View       string // "" for every job the savepoint covers
	Savepoint  string
	Checkpoint uint64
}

// StopJob is STOP JOB view [WITH SAVEPOINT name].
type StopJob struct{ View, Savepoint string }

// StartJob is START JOB view [FROM SAVEPOINT name] [WITH (k = v, ...)].
type StartJob struct {
	View, Savepoint string
	Options         map[string]string
}

// AlterView is ALTER MATERIALIZED VIEW name SET (k = v, ...).
type AlterView struct {
	Name    string
	Options map[string]string
}

// Declare is DECLARE name [NO SCROLL] CURSOR [WITH[OUT] HOLD] FOR query.
type Declare struct {
	Cursor string
	Query  *Query
	// Hold is WITH HOLD: the cursor outlives the COMMIT of its block.
	Hold bool
}

// Fetch is FETCH [FORWARD] [n|ALL|NEXT] [FROM|IN] cursor (Count -1 for ALL).
type Fetch struct {
	Cursor string
	Count  int64
}

// CloseCursor is CLOSE name | CLOSE ALL (Cursor "").
type CloseCursor struct{ Cursor string }

// Discard is DISCARD ALL (and DEALLOCATE [PREPARE] ALL|name, with Name set).
type Discard struct{ Deallocate, Name string }

func (*Query) stmt()           {}
func (*CreateTable) stmt()     {}
func (*CreateSource) stmt()    {}
func (*CreateSink) stmt()      {}
func (*DropSink) stmt()        {}
func (*CreateView) stmt()      {}
func (*Drop) stmt()            {}
func (*Copy) stmt()            {}
func (*Set) stmt()             {}
func (*Show) stmt()            {}
func (*Reset) stmt()           {}
func (*ShowObjects) stmt()     {}
func (*ShowCreate) stmt()      {}
func (*Checkpoint) stmt()      {}
func (*CreateSavepoint) stmt() {}
func (*AlterCluster) stmt()    {}
func (*Restore) stmt()         {}
func (*StopJob) stmt()         {}
func (*StartJob) stmt()        {}
func (*AlterView) stmt()       {}
func (*Declare) stmt()         {}
func (*Fetch) stmt()           {}
func (*CloseCursor) stmt()     {}
func (*Discard) stmt()         {}
