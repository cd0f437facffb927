package exec

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// rankOp is one instance of a rank node: ORDER BY ... LIMIT in a view
// (one partition), or ROW_NUMBER/RANK/DENSE_RANK OVER (PARTITION BY ...
// ORDER BY ...) with the bound an outer filter puts on them (top-N per
// group; N = 1 deduplicates). It keeps every row of each partition, so
// retractions are exact: when a row of the top N goes, the next one moves
// up. At each barrier it recomputes the partitions that changed and emits
// the difference from what it emitted before.
//
// State, per row: key group, partition key, row -> multiplicity, written
// once per epoch for the rows that changed; what was emitted is recomputed
// at load.
type rankOp struct {
	j         *Job
	spec      *rankSpec
	op        uint32
	inTs      []types.T
	outTs     []types.T
	parts     map[string]*rankPart
	dirty     map[string]struct{}
	dirtyRows map[joinRef]byte // partition key and row -> key group
	out       *outlet
	scratch   []byte
}

type rankPart struct {
	kg   byte
	rows map[string]int64 // encoded row -> multiplicity
	out  map[string]int64 // encoded output row -> multiplicity, as emitted
	// top holds the input rows behind out. While a partition only gains
	// rows, its new output comes from top and the rows added (a row that
	// was not in the top cannot enter it when rows are only added), so a
	// barrier sorts a few rows, not the partition; a retraction (full)
	// makes it sort them all.
	top   map[string]int64
	added []string
	full  bool
}

func newRankOp(j *Job, n *gnode) *rankOp {
	o := &rankOp{j: j, spec: n.rank, op: n.op, parts: map[string]*rankPart{},
		dirty: map[string]struct{}{}, dirtyRows: map[joinRef]byte{}}
	o.inTs = n.ins[0].from.outTypes(n.ins[0])
	o.outTs = o.inTs
	if n.rank.window != nil {
		o.outTs = n.rank.window.Types()
	}
	return o
}

func (o *rankOp) push(ectx *expr.Ctx, c Chunk, _ int) error {
	rec := c.Rec
	defer rec.Release()
	n := int(rec.NumRows())
	keys := make([]arrow.Array, len(o.spec.partition))
	defer releaseAll(keys)
	for i, k := range o.spec.partition {
		var err error
		if keys[i], err = expr.Eval(ectx, k, rec); err != nil {
			return err
		}
	}
	h := hashColumns(nil, keys, n)
	keyTs := exprTypes(o.spec.partition)
	for i := 0; i < n; i++ {
		o.scratch = o.scratch[:0]
		for c, k := range keys {
			o.scratch = encodeDatum(o.scratch, types.DatumAt(k, i, keyTs[c]), keyTs[c])
		}
		key := string(o.scratch)
		enc := string(encodeRow(o.scratch[:0], rec, i, o.inTs))
		p := o.parts[key]
		if p == nil {
			p = &rankPart{kg: byte(keyGroup(h[i])), rows: map[string]int64{}, out: map[string]int64{}, top: map[string]int64{}}
			o.parts[key] = p
		}
		s := int64(1)
		if c.Ops != nil {
			s = int64(c.Ops[i].Sign())
		}
		if s > 0 {
			p.added = append(p.added, enc)
		} else {
			p.full = true
		}
		if p.rows[enc] += s; p.rows[enc] <= 0 {
			delete(p.rows, enc)
		}
		o.dirty[key] = struct{}{}
		o.dirtyRows[joinRef{key: key, enc: enc}] = p.kg
	}
	return nil
}

// barrier emits, for each partition that changed, the difference between
// its new top rows and those it emitted, and writes the changed rows.
func (o *rankOp) barrier(ectx *expr.Ctx, b *Barrier, w *storage.Batch) error {
	keys := make([]string, 0, len(o.dirty))
	for k := range o.dirty {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf := newRowsOut(o.outTs)
	for _, k := range keys {
		p := o.parts[k]
		candidates := p.rows
		if !p.full {
			candidates = maps.Clone(p.top)
			for _, enc := range p.added {
				candidates[enc]++
			}
		}
		next, top, err := o.compute(ectx, candidates)
		if err != nil {
			return err
		}
		p.top, p.added, p.full = top, p.added[:0], false
		for enc, c := range p.out {
			for d := next[enc]; d < c; d++ {
				buf.appendSide(0, o.outTs, nil, -1, enc)
				buf.ops = append(buf.ops, OpDelete)
				buf.n++
			}
		}
		for enc, c := range next {
			for d := p.out[enc]; d < c; d++ {
				buf.appendSide(0, o.outTs, nil, -1, enc)
				buf.ops = append(buf.ops, OpInsert)
				buf.n++
			}
		}
		p.out = next
		if len(p.rows) == 0 {
			delete(o.parts, k)
		}
		if buf.n >= 16<<10 {
			if err := o.out.emit(ectx, buf.chunk(), nil); err != nil {
				return err
			}
		}
	}
	clear(o.dirty)
	if buf.n > 0 {
		if err := o.out.emit(ectx, buf.chunk(), nil); err != nil {
			return err
		}
	}
	if w != nil && len(o.dirtyRows) > 0 {
		type kv struct{ k, v []byte }
		writes := make([]kv, 0, len(o.dirtyRows))
		for ref, kg := range o.dirtyRows {
			var count int64
			if p := o.parts[ref.key]; p != nil {
				count = p.rows[ref.enc]
			}
			k := binary.AppendUvarint([]byte{kg}, uint64(len(ref.key)))
			k = append(append(k, ref.key...), ref.enc...)
			var v []byte
			if count > 0 {
				v = binary.AppendUvarint(nil, uint64(count))
			}
			writes = append(writes, kv{k, v})
		}
		slices.SortFunc(writes, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
		r := w.NewRun()
		for _, x := range writes {
			if x.v != nil {
				r.PutState(o.j.spec.ID, o.op, x.k, x.v)
			} else {
				r.DeleteState(o.j.spec.ID, o.op, x.k)
			}
		}
		w.AddRun(r)
	}
	clear(o.dirtyRows)
	return nil
}

// compute returns a partition's output rows: the rows at positions
// [lo, hi) of the order, or every row (up to the bound) with its window
// functions' values appended. Rows that tie in the order are taken in the
// order of their encoding, so equal inputs give equal outputs.
func (o *rankOp) compute(ectx *expr.Ctx, rows map[string]int64) (out, top map[string]int64, err error) {
	out, top = map[string]int64{}, map[string]int64{}
	if len(rows) == 0 {
		return out, top, nil
	}
	encs := make([]string, 0, len(rows))
	for enc, c := range rows {
		for range c {
			encs = append(encs, enc)
		}
	}
	slices.Sort(encs)
	rec := decodeRecord(o.inTs, encs)
	defer rec.Release()
	keys := make([]arrow.Array, len(o.spec.order))
	defer releaseAll(keys)
	cmps := make([]func(i, j int) int, len(o.spec.order))
	for i, k := range o.spec.order {
		var err error
		if keys[i], err = expr.Eval(ectx, k.E, rec); err != nil {
			return nil, nil, err
		}
		cmps[i] = comparator(keys[i], k.E.Type(), k.Desc, k.NullsFirst)
	}
	cmp := func(a, b int) int {
		for _, c := range cmps {
			if r := c(a, b); r != 0 {
				return r
			}
		}
		return 0
	}
	idx := make([]int, len(encs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return cmp(idx[a], idx[b]) < 0 })
	w := o.spec.window
	if w == nil {
		hi := int64(len(idx))
		if o.spec.hi >= 0 {
			hi = min(hi, o.spec.hi)
		}
		for k := int64(0); k < hi; k++ {
			top[encs[idx[k]]]++
			if k >= o.spec.lo {
				out[encs[idx[k]]]++
			}
		}
		return out, top, nil
	}
	vals := make([]int64, len(w.Funcs))
	var rank, dense int64
	var buf []byte
	for k, r := range idx {
		if k == 0 || cmp(idx[k-1], r) != 0 {
			rank, dense = int64(k)+1, dense+1
		}
		for f, fn := range w.Funcs {
			switch fn.Kind {
			case WinRowNumber:
				vals[f] = int64(k) + 1
			case WinRank:
				vals[f] = rank
			case WinDenseRank:
				vals[f] = dense
			}
		}
		if o.spec.hi >= 0 && vals[0] > o.spec.hi {
			break // every function here only grows along the order
		}
		buf = append(buf[:0], encs[r]...)
		for f, fn := range w.Funcs {
			buf = encodeDatum(buf, types.Int(vals[f]), fn.T)
		}
		out[string(buf)]++
		top[encs[r]]++
	}
	return out, top, nil
}

// reemitAll makes the next barrier emit every partition's output anew (a
// view upgraded from a savepoint rebuilds its rows from state).
func (o *rankOp) reemitAll() {
	for k, p := range o.parts {
		p.out, p.full = map[string]int64{}, true
		o.dirty[k] = struct{}{}
	}
}

// load restores the rows of the key groups instance inst of par owns and
// recomputes what each partition emitted.
func (o *rankOp) load(inst, par int) error {
	err := o.j.db.ScanState(o.j.spec.ID, o.op, func(key, val []byte) error {
		if len(key) < 2 || instanceOf(int(key[0]), par) != inst {
			return nil
		}
		klen, rest, err := readUvarint(key[1:])
		if err != nil || uint64(len(rest)) < klen {
			return errCorruptState
		}
		count, _, err := readUvarint(val)
		if err != nil {
			return err
		}
		k := string(rest[:klen])
		p := o.parts[k]
		if p == nil {
			p = &rankPart{kg: key[0], rows: map[string]int64{}}
			o.parts[k] = p
		}
		p.rows[string(rest[klen:])] = int64(count)
		return nil
	})
	if err != nil {
		return err
	}
	ectx := o.j.exprCtx()
	for _, p := range o.parts {
		if p.out, p.top, err = o.compute(ectx, p.rows); err != nil {
			return err
		}
	}
	return nil
}
