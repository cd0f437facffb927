// Package api is the surface a protocol front end (wire/) uses to run
// statements: parsed statements, their result columns, results, rows as
// Arrow record batches and COPY FROM STDIN input. It knows neither the wire
// protocol nor the engine, so a front end (and its fuzz tests) depends on
// this small package and not on the whole engine.
package api

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/types"
)

// Column describes one result column.
type Column struct {
	Name string
	T    types.T
}

// Rows yields a statement's result rows as Arrow record batches.
type Rows interface {
	// Next returns the next non-empty batch, or (nil, nil) at the end. The
	// batch is owned by the caller, who must Release it. For a live change
	// stream (EMIT CHANGES) Next blocks until rows arrive; it returns a 57014
	// error when ctx is canceled.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	// Close releases the rows; it is safe to call more than once.
	Close()
}

// Stmt is a parsed and analysed statement, reusable across executions.
type Stmt struct {
	SQL string
	// ParamTypes are the types of $1..$n (inferred where the client gave none).
	ParamTypes []types.T
	// Columns describes the rows the statement returns; nil if it returns none.
	Columns []Column
	// CopyIn is set for COPY ... FROM STDIN, CopyOut for COPY ... TO STDOUT.
	CopyIn, CopyOut bool
	// CopyBinary is set for COPY ... TO STDOUT in PostgreSQL's binary
	// format (FORMAT binary): wire/ sends the rows in it.
	CopyBinary bool
	// Empty is set for an empty query string (EmptyQueryResponse).
	Empty bool

	// Plan is the engine's own state for the statement, opaque to the
	// front end.
	Plan any
}

// Result is the outcome of executing a statement.
type Result struct {
	// Tag is the CommandComplete tag, e.g. "SELECT 3", "INSERT 0 2". For
	// statements that return rows, wire/ fills in the row count itself if Tag
	// is "SELECT" or "COPY" (without a count).
	Tag string
	// Rows is set when the statement returns rows (including COPY TO STDOUT,
	// whose rows wire/ sends as CopyData in text format).
	Rows Rows
	// CopyIn is set for COPY ... FROM STDIN: wire/ sends CopyInResponse, feeds
	// every CopyData payload to Write, then calls Done on CopyDone (which
	// returns the final tag) or Abort on CopyFail / error.
	CopyIn CopyIn
	// ParamChanges lists ParameterStatus values changed by the statement
	// (e.g. SET client_encoding), to be reported to the client.
	ParamChanges map[string]string
	// Notices are sent as NoticeResponse before CommandComplete.
	Notices []string
}

// CopyIn receives the data of COPY ... FROM STDIN. One that also has
// Binary() returning true takes PostgreSQL's binary COPY format.
type CopyIn interface {
	// NumColumns is reported in CopyInResponse.
	NumColumns() int
	Write(data []byte) error
	Done() (tag string, err error)
	Abort(reason string)
}

// ProtocolStatements are the connection's named statements of the
// extended protocol (the unnamed one is not among them). The front end
// keeps them; the engine's PREPARE, DEALLOCATE and DISCARD reach them
// through this, as PostgreSQL has one namespace for both.
type ProtocolStatements interface {
	Has(name string) bool
	Drop(name string)
	DropAll()
}
