package exec

import (
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec/op"
)

type arrowBuilder = array.Builder

// Op is a row's change kind in a change stream (the sink contract's, as a
// changelog's op column is what sinks read).
type Op = connector.Op

const (
	OpInsert       = connector.OpInsert
	OpDelete       = connector.OpDelete
	OpUpdateBefore = connector.OpUpdateBefore
	OpUpdateAfter  = connector.OpUpdateAfter
)

// Chunk is a batch of rows with an optional change op per row (the
// operator contract's, exec/op).
type Chunk = op.Chunk
