package storage

import "github.com/streamdb/streamdb/types"

// ColumnDef is one column of a stream or view.
type ColumnDef struct {
	Name    string
	Type    types.T
	NotNull bool
	// Default is the column's DEFAULT expression as PostgreSQL prints it
	// (pg_attrdef); "" for none.
	Default string `json:",omitempty"`
}

// Watermark is a table's WATERMARK FOR clause: Column is the event-time
// column, Delay the allowed lateness in microseconds (ts - INTERVAL ...).
type Watermark struct {
	Column  string
	DelayUS int64
	SQL     string // the clause as written, for SHOW CREATE TABLE
}

// TableKind says what a catalog entry is.
type TableKind uint8

const (
	KindStream TableKind = iota // CREATE TABLE: an append-only stream with a durable log
	KindView                    // CREATE MATERIALIZED VIEW: rows maintained by a job
	KindSystem                  // a read-only system table (streamdb_jobs, ...), computed when read
	KindSource                  // CREATE SOURCE: read by jobs from its connector, not logged (Options: the WITH options; Partitions: its splits)
)

// KindPlainView is CREATE VIEW: a stored query (SQL), expanded where it is
// read. Its value is fixed at 4: 3 is KindSource (CREATE SOURCE), added in
// parallel.
const KindPlainView TableKind = 4

// TableDef is a catalog entry. It is immutable once stored; DDL stores a new one.
type TableDef struct {
	ID         uint64
	Name       string
	Kind       TableKind
	Columns    []ColumnDef
	Watermark  *Watermark `json:",omitempty"`
	Partitions int
	// For views: the defining query as the user wrote it, and the key columns
	// (indexes into Columns) that identify a row; none means a multiset of rows.
	SQL     string `json:",omitempty"`
	KeyCols []int  `json:",omitempty"`
	// Options holds per-object settings (e.g. a view's restart.* keys).
	Options map[string]string `json:",omitempty"`
	// KeyFormat is how a view's state keys hold interval and float values:
	// 0 (views created before KeyFormatCanonical) as they were, which can
	// split equal values across keys; KeyFormatCanonical as the one
	// representative of their equality class (exec/keycanon.go);
	// KeyFormatJSONB also jsonb values in their key form (types.JSONBKey).
	KeyFormat int `json:",omitempty"`
	// Owner is the role that created the object; "" (entries written before
	// roles existed) means the bootstrap superuser.
	Owner string `json:",omitempty"`
	// Grants maps a role to the privileges granted to it on the object
	// (PrivSelect, PrivInsert, PrivUpdate, PrivDelete), sorted.
	Grants map[string][]string `json:",omitempty"`
	// Indexes are the secondary indexes of a materialized view (CREATE
	// INDEX), in creation order (index.go).
	Indexes []IndexDef `json:",omitempty"`
}

// KeyFormatCanonical keys intervals and floats by their representatives.
const KeyFormatCanonical = 1

// KeyFormatJSONB also keys jsonb values by their key form (numbers without
// trailing fractional zeros).
const KeyFormatJSONB = 2

// KeyFormatTypedArrays marks views whose output log holds arrays as
// Lists of the element type's layout (types.ArrayArrow): the
// TableDef.KeyFormat of views created now. A view from before it with an
// array column of a non-text element type is refused at start
// (exec.CheckArrayLayout): its log holds List<String> without the type
// metadata that would say how to read it.
const KeyFormatTypedArrays = 3

// KeyFormatNumericDScale marks views created since unconstrained NUMERIC
// carries a display scale per value: its aggregates' state holds a scale
// byte beside sum/avg, and `/` and avg are held at 20 decimals rather
// than 16. A view from before it that computes an unconstrained numeric
// anywhere in its plan is refused at start (exec.CheckNumericLayout): its
// state would be read at the wrong scale.
const KeyFormatNumericDScale = 4

// KeyFormatUUIDBytes marks views created since uuid is stored as 16 bytes
// (Arrow FixedSizeBinary(16)) rather than its 36-byte text. A view from
// before it whose plan carries a uuid anywhere is refused at start
// (exec.CheckUUIDLayout): its output log holds uuid as text without the
// type metadata that would say how to read it back. (Tables and streams
// carry that metadata: their blocks are read into the new layout.)
const KeyFormatUUIDBytes = 5

// KeyFormatNarrowJoins marks views created since a view's joins keep only
// the columns read above them and by their ON (planner.PruneJoinInputs):
// their join state holds narrowed rows. A view from before it is planned
// as it was, with whole rows, so its stored state still reads.
const KeyFormatNarrowJoins = 6

// KeyFormatAvgDistinct marks views created since avg(DISTINCT x) of a
// NUMERIC x keeps the values of x at x's own scale (sql/bind aggArg): its
// state holds them so. A view from before it is bound as it was, x cast to
// the average's type, so the values its state holds still read.
const KeyFormatAvgDistinct = 7

// KeyFormatCurrent is the KeyFormat of views created now.
const KeyFormatCurrent = KeyFormatAvgDistinct

// Privileges that GRANT gives on a stream or view.
const (
	PrivSelect = "SELECT"
	PrivInsert = "INSERT"
	PrivUpdate = "UPDATE" // UPDATE and ON CONFLICT DO UPDATE of a keyed table
	PrivDelete = "DELETE" // DELETE from a keyed table
)

// Has reports whether role was granted priv on t.
func (t *TableDef) Has(role, priv string) bool {
	for _, p := range t.Grants[role] {
		if p == priv {
			return true
		}
	}
	return false
}

// RoleDef is a role (a user when it may log in).
type RoleDef struct {
	Name      string
	Superuser bool `json:",omitempty"`
	Login     bool `json:",omitempty"`
	// Verifier is the role's SCRAM-SHA-256 verifier in PostgreSQL's format
	// (SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>); "" means no
	// password. The password itself is never stored.
	Verifier string `json:",omitempty"`
}

// Column returns the index of the named column, or -1.
func (t *TableDef) Column(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}
