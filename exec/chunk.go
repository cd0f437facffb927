package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

type arrowBuilder = array.Builder

// Op is a row's change kind in a change stream.
type Op int8

const (
	OpInsert Op = iota
	OpDelete
	OpUpdateBefore
	OpUpdateAfter
)

// String returns the op as shown in a change stream's op column.
func (o Op) String() string {
	switch o {
	case OpDelete:
		return "delete"
	case OpUpdateBefore:
		return "update_before"
	case OpUpdateAfter:
		return "update_after"
	}
	return "insert"
}

// Sign is +1 for rows added and -1 for rows retracted.
func (o Op) Sign() int8 {
	if o == OpDelete || o == OpUpdateBefore {
		return -1
	}
	return 1
}

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
