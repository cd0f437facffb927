package opkit

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/types"
)

// RowsOut collects an operator's output rows with their ops, each side's
// columns (a join's two inputs; one side otherwise) taken from an input
// record, decoded from a stored row, or NULL.
type RowsOut struct {
	ts  []types.T
	bls []array.Builder
	Ops []types.ChangeOp
	N   int
	// decs decodes stored rows into the builders from a column offset.
	decs map[int]*RowDecoder
	// Pairs of a join (AddPair) wait here and are appended a column at a
	// time: the probe side's by index from its batch, the stored side's
	// decoded. Anything else appended first flushes them, keeping order.
	pend struct {
		ts   *[2][]types.T
		rec  arrow.RecordBatch
		side int
		idx  []int
		encs []string
	}
}

// NewRowsOut returns an empty RowsOut for rows of types ts.
func NewRowsOut(ts []types.T) *RowsOut {
	o := &RowsOut{ts: ts}
	o.reset()
	return o
}

func (r *RowsOut) reset() {
	r.bls = make([]array.Builder, len(r.ts))
	for i, t := range r.ts {
		r.bls[i] = types.NewBuilder(Mem, t)
	}
	r.Ops, r.N = nil, 0
	r.decs = map[int]*RowDecoder{}
}

// Chunk returns the rows collected so far and starts anew.
func (r *RowsOut) Chunk() op.Chunk {
	r.flushPairs()
	cols := make([]arrow.Array, len(r.bls))
	for i, b := range r.bls {
		cols[i] = b.NewArray()
		b.Release()
	}
	c := op.Chunk{Rec: NewRecord(r.ts, cols, r.N), Ops: r.Ops}
	r.reset()
	return c
}

// Release drops the rows collected, for a RowsOut not made into a chunk.
func (r *RowsOut) Release() {
	for _, b := range r.bls {
		b.Release()
	}
}

// OpOf is the op of a row of sign sign: an insert, or a delete if negative.
func OpOf(sign int64) types.ChangeOp {
	if sign < 0 {
		return types.ChangeDelete
	}
	return types.ChangeInsert
}

// AppendSide appends one side's columns at column offset from: row i of
// rec, or the stored row enc, or NULLs (i < 0 and enc == "").
func (r *RowsOut) AppendSide(from int, ts []types.T, rec arrow.RecordBatch, i int, enc string) {
	r.flushPairs()
	switch {
	case i >= 0:
		for c, t := range ts {
			types.AppendDatum(r.bls[from+c], types.DatumAt(rec.Column(c), i, t), t)
		}
	case enc != "":
		d := r.decs[from]
		if d == nil {
			d = NewRowDecoder(ts, r.bls[from:from+len(ts)])
			r.decs[from] = d
		}
		d.AppendRow(enc)
	default:
		for c := range ts {
			r.bls[from+c].AppendNull()
		}
	}
}

// AddOp ends a row whose columns were appended, with its op.
func (r *RowsOut) AddOp(o types.ChangeOp) {
	r.Ops = append(r.Ops, o)
	r.N++
}

// AddStored appends the stored row enc, of all the columns, with op o.
func (r *RowsOut) AddStored(enc string, o types.ChangeOp) {
	r.AppendSide(0, r.ts, nil, -1, enc)
	r.AddOp(o)
}

// AddPair appends row i of rec (on side of a join whose sides have types
// ts) joined with the stored row enc of the other side.
func (r *RowsOut) AddPair(ts *[2][]types.T, sign int64, rec arrow.RecordBatch, i, side int, enc string) {
	p := &r.pend
	if len(p.idx) > 0 && (p.rec != rec || p.side != side) {
		r.flushPairs()
	}
	p.ts, p.rec, p.side = ts, rec, side
	p.idx = append(p.idx, i)
	p.encs = append(p.encs, enc)
	r.AddOp(OpOf(sign))
}

// flushPairs appends the waiting pairs to the builders.
func (r *RowsOut) flushPairs() {
	p := &r.pend
	if len(p.idx) == 0 {
		return
	}
	ts := p.ts
	probe, stored := 0, len(ts[0]) // column offsets of the two sides
	if p.side == 1 {
		probe, stored = stored, probe
	}
	for c, t := range ts[p.side] {
		AppendTake(r.bls[probe+c], p.rec.Column(c), p.idx, t)
	}
	sts := ts[1-p.side]
	d := NewRowDecoder(sts, r.bls[stored:stored+len(sts)])
	for _, enc := range p.encs {
		d.AppendRow(enc)
	}
	clear(p.encs)
	p.ts, p.rec, p.idx, p.encs = nil, nil, p.idx[:0], p.encs[:0]
}

// DecodeRecord builds a record from encoded rows (EncodeRow).
func DecodeRecord(ts []types.T, encs []string) arrow.RecordBatch {
	bls := make([]array.Builder, len(ts))
	for i, t := range ts {
		bls[i] = types.NewBuilder(Mem, t)
		bls[i].Reserve(len(encs))
	}
	d := NewRowDecoder(ts, bls)
	for _, enc := range encs {
		d.AppendRow(enc)
	}
	cols := make([]arrow.Array, len(ts))
	for i, b := range bls {
		cols[i] = b.NewArray()
		b.Release()
	}
	return NewRecord(ts, cols, len(encs))
}
