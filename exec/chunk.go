package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/connector"
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

// Chunk is a batch of rows with an optional change op per row (nil: all inserts).
type Chunk struct {
	Rec arrow.RecordBatch
	Ops []Op
	// Groups holds each row's key group, for an aggregate's changes (the
	// sink keys view rows by it); nil otherwise.
	Groups []uint8
}

// Signs returns the rows' signs, or nil if all are inserts.
func (c Chunk) Signs() []int8 {
	if c.Ops == nil {
		return nil
	}
	s := make([]int8, len(c.Ops))
	for i, o := range c.Ops {
		s[i] = o.Sign()
	}
	return s
}
