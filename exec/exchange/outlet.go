package exchange

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// Outlet is an op.Outlet over the network: a producing instance's end of
// an edge whose consumer instances are reached through one Sender each
// (index = consumer instance). It routes each row to the instance that
// owns its key group, as the in-process outlet does.
type Outlet struct {
	ctx     context.Context
	senders []*Sender
	keys    []int // the key columns the rows are hashed by
	types   []types.T
	hash    []uint64
	idx     [][]int
}

// NewOutlet returns an outlet sending rows of column types ts to senders,
// routed by the hash of columns keys (the hash the in-process outlet and
// the aggregates use, accum.HashColumns).
func NewOutlet(ctx context.Context, senders []*Sender, keys []int, ts []types.T) *Outlet {
	return &Outlet{ctx: ctx, senders: senders, keys: keys, types: ts, idx: make([][]int, len(senders))}
}

// Emit implements op.Outlet; it takes ownership of c.Rec.
func (o *Outlet) Emit(_ *expr.Ctx, c op.Chunk) error {
	n := int(c.Rec.NumRows())
	if n == 0 {
		c.Rec.Release()
		return nil
	}
	if len(o.senders) == 1 {
		return o.senders[0].Send(o.ctx, c)
	}
	defer c.Rec.Release()
	cols := make([]arrow.Array, len(o.keys))
	for i, k := range o.keys {
		cols[i] = c.Rec.Column(k)
	}
	o.hash = accum.HashColumns(o.hash, cols, n)
	for i := range o.idx {
		o.idx[i] = o.idx[i][:0]
	}
	for r, h := range o.hash {
		inst := op.InstanceOf(op.KeyGroup(h), len(o.senders))
		o.idx[inst] = append(o.idx[inst], r)
	}
	for i, rows := range o.idx {
		if len(rows) == 0 {
			continue
		}
		part := op.Chunk{Rec: opkit.TakeRecord(c.Rec, rows, o.types)}
		if c.Ops != nil {
			part.Ops = make([]types.ChangeOp, len(rows))
			for x, r := range rows {
				part.Ops[x] = c.Ops[r]
			}
		}
		if c.Groups != nil {
			part.Groups = make([]uint8, len(rows))
			for x, r := range rows {
				part.Groups[x] = c.Groups[r]
			}
		}
		if err := o.senders[i].Send(o.ctx, part); err != nil {
			return err
		}
	}
	return nil
}

// Barrier sends b, with the watermark of the rows emitted before it, to
// every consumer instance.
func (o *Outlet) Barrier(b *op.Barrier, wm op.Watermark) error {
	for _, s := range o.senders {
		if err := s.Barrier(o.ctx, b, wm); err != nil {
			return err
		}
	}
	return nil
}

// Close ends every stream cleanly.
func (o *Outlet) Close(ctx context.Context) error {
	var errs []error
	for _, s := range o.senders {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}

var _ op.Outlet = (*Outlet)(nil)
