package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// View rows are stored one per key: for an aggregate view the key is the
// group key, for a view without aggregation over a stream the row's source
// position, and over a changelog the row itself. The value is the row, each
// column encodeDatum'd, followed for the last kind by its multiplicity.

func ReadView(ctx *Ctx, p *ScanView, emit func(arrow.RecordBatch) error) error {
	ts := p.Types()
	const chunk = 16 << 10
	bls := make([]array.Builder, len(ts))
	for i, t := range ts {
		bls[i] = types.NewBuilder(ctx.Alloc(), t)
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
		rec := opkit.NewRecord(ts, cols, n)
		n = 0
		return emit(rec)
	}
	r := p.Snap // AS OF: an exported snapshot
	if r == nil {
		r = ctx.Snap
	}
	ds := make([]types.Datum, len(ts))
	visit := func(_, row []byte) error {
		for c, t := range ts {
			d, rest, err := opkit.DecodeDatum(row, t)
			if err != nil {
				return err
			}
			row = rest
			ds[c] = d
		}
		count := uint64(1)
		if len(row) > 0 {
			// A multiset row: the rest is its count, then maybe the
			// display scales of its unconstrained NUMERIC values.
			var err error
			if count, row, err = opkit.ReadUvarint(row); err != nil {
				return err
			}
			readDScales(row, ds, ts)
		}
		for k := uint64(0); k < count; k++ {
			for c, t := range ts {
				types.AppendDatum(bls[c], ds[c], t)
			}
			n++
		}
		if n >= chunk {
			if err := ctx.Check(); err != nil {
				return err
			}
			return flush()
		}
		return nil
	}
	if p.Index == nil {
		if err := ctx.DB.Views().Scan(r, p.View.ID, visit); err != nil {
			return err
		}
		return flush()
	}
	rs, err := p.Index.Ranges(ctx.Expr, ts)
	if err != nil {
		return err
	}
	for _, kr := range rs {
		if err := ctx.DB.Views().ScanIndex(r, p.View.ID, p.Index.Index.ID, kr.Lo, kr.Hi, visit); err != nil {
			return err
		}
	}
	return flush()
}

// AppendDScales appends to a multiset row's value (row, count) the display
// scales of row i's unconstrained NUMERIC values, one byte each in column
// order (types/dscale.go); nothing if none carries one. The row, the
// multiset's key, leaves them out so equal values share a key.
func AppendDScales(buf []byte, cols []arrow.Array, i int, ts []types.T) []byte {
	start := len(buf)
	any := false
	for c, t := range ts {
		if t.Kind != types.Numeric || t.Prec != 0 {
			continue
		}
		var b int8
		if ds := types.DScales(cols[c]); ds != nil && cols[c].IsValid(i) {
			b = ds[i]
		}
		buf = append(buf, byte(b))
		any = any || b != 0
	}
	if !any {
		return buf[:start]
	}
	return buf
}

// readDScales applies appendDScales's bytes (rest, possibly empty) to the
// decoded row ds.
func readDScales(rest []byte, ds []types.Datum, ts []types.T) {
	k := 0
	for c, t := range ts {
		if t.Kind != types.Numeric || t.Prec != 0 {
			continue
		}
		if k >= len(rest) {
			return
		}
		if !ds[c].Null {
			ds[c].DS = int8(rest[k])
		}
		k++
	}
}
