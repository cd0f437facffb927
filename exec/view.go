package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/types"
)

// View rows are stored one per key: for an aggregate view the key is the
// group key, for a view without aggregation over a stream the row's source
// position, and over a changelog the row itself. The value is the row, each
// column encodeDatum'd, followed for the last kind by its multiplicity.

func scanView(ctx *Ctx, p *ScanView, emit func(arrow.RecordBatch) error) error {
	ts := p.Types()
	const chunk = 16 << 10
	bls := make([]arrowBuilder, len(ts))
	for i, t := range ts {
		bls[i] = types.NewBuilder(ctx.alloc(), t)
	}
	defer func() {
		for _, b := range bls {
			b.Release()
		}
	}()
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		cols := make([]arrow.Array, len(bls))
		for i, b := range bls {
			cols[i] = b.NewArray()
		}
		rec := newRecord(ts, cols, n)
		n = 0
		return emit(rec)
	}
	r := p.Snap // AS OF: an exported snapshot
	if r == nil {
		r = ctx.Snap
	}
	visit := func(_, row []byte) error {
		start := row
		for c, t := range ts {
			d, rest, err := decodeDatum(row, t)
			if err != nil {
				return err
			}
			row = rest
			types.AppendDatum(bls[c], d, t)
		}
		n++
		if len(row) > 0 {
			// A multiset row: the rest is its count; append the copies.
			count, _, err := readUvarint(row)
			if err != nil {
				return err
			}
			for k := uint64(1); k < count; k++ {
				body := start
				for c, t := range ts {
					d, rest, _ := decodeDatum(body, t)
					body = rest
					types.AppendDatum(bls[c], d, t)
				}
				n++
			}
		}
		if n >= chunk {
			if err := ctx.check(); err != nil {
				return err
			}
			return flush()
		}
		return nil
	}
	if p.Index == nil {
		if err := ctx.DB.ScanView(r, p.View.ID, visit); err != nil {
			return err
		}
		return flush()
	}
	rs, err := p.Index.ranges(ctx.Expr, ts)
	if err != nil {
		return err
	}
	for _, kr := range rs {
		if err := ctx.DB.ScanIndex(r, p.View.ID, p.Index.Index.ID, kr.lo, kr.hi, visit); err != nil {
			return err
		}
	}
	return flush()
}
