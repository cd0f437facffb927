package join

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Op is one instance of a streaming equi-join, a symmetric hash join:
// both inputs' rows are kept in state by join key, and a row from one side
// is matched against the other side's rows of its key; the pairs that pass
// the residual condition go out with the row's sign (+1 insert, -1
// retract). For outer, semi and anti joins each stored row also counts the
// rows of the other side that match it: a NULL-padded row is retracted
// when its first match comes and emitted again when its last one goes, and
// a semi (anti) join emits a left row when its count leaves (reaches) zero.
//
// State, per row: key group, side, join key, row -> multiplicity (with
// the fields appendJoinValue describes), written once per epoch for the rows
// that changed. Match counts are recomputed at load, from the rows in
// state plus the matches a row keeps of partners freed by the watermark.
type Op struct {
	spec  *Spec
	op    uint32
	ts    [2][]types.T
	keys  [2][]expr.Expr
	outTs []types.T
	semi  bool // semi or anti: only left columns go out
	// deferEvict: Load keeps every group until the first barrier (DeferEviction).
	deferEvict bool
	preserve   [2]bool
	store      store // both sides' rows by key, and their eviction (store.go)
	out        op.Outlet
	buf        *opkit.RowsOut
	keyEnc     opkit.RowEncoder
	rowEnc     opkit.RowEncoder
	keyCols    []arrow.Array
	// per push, reused: each row's group at the start of the batch
	rowGroups []*joinGroup
	// candidate pairs of a push, reused
	pi   []int
	qenc []string
	qrow []*joinRow

	ttlOf func() int64
	ttl   joinTTL    // state.ttl (ttl.go)
	lk    lookupJoin // a lookup join's left rows waiting for the barrier (lookupjoin.go)
	tw    joinWM     // interval and window joins freed by watermark (intervaljoin.go)
}

// joinRowBytes and joinGroupBytes estimate the memory of a stored row and
// of a group besides their encodings. A row is 48 bytes in its group's
// slice, whose capacity append doubles (a third more on average), and its
// own string rounds up to a size class: counted as 48, the rows of q9's
// join held 1.5 times what the estimate said (a heap profile at 5M events:
// 150 MB of row slices and strings for an estimate of about 100 MB).
const (
	joinRowBytes   = 80
	joinGroupBytes = 120
)

type emptiedKey struct {
	epoch uint64
	key   string
}

type joinDirty struct {
	g    *joinGroup
	side int
	enc  string
}

// nullKey is the group of rows whose join key has a NULL: encoded keys
// start with a 0 or 1 byte, so no key equals it and it is never probed.
const nullKey = "\xff"

type joinGroup struct {
	kg  byte
	key string // its key in groups
	// rows of each side, in no order; idx indexes a side's rows by
	// encoding once it has more than joinIndexAt (a group is usually a
	// few rows: a slice costs one allocation, not a map's several).
	rows [2][]joinRow
	idx  [2]map[string]int32
	gone bool // removed from groups (a group of its key may come anew, or be evicted)
	// partial[s]: side s's rows were not read back with the group (an
	// inner join reads back only the side a row is matched against), so
	// rows[s] holds only the rows changed since: deltas over the state
	// table's counts until the barrier resolves them, then their counts,
	// kept even at zero while the side is partial (loadSide).
	partial [2]bool
	hash    uint64
	// saved is the epoch whose commit holds the group's last change; used
	// the operator's tick when a row last used the group; need[s] the tick
	// when a row of the other side was last matched against side s, or
	// when s got its first row if none was since (evictside.go).
	saved, used uint64
	need        [2]uint64
	rank        [2]uint8 // evictSides: each side's rank in its pass
	// state.ttl (ttl.go): idle is the time of the last barrier after a
	// row touched the group (touched: in this epoch); queued says it is in
	// the expiry queue; evicted that it went to the state table.
	idle                     int64
	touched, queued, evicted bool
	// clockRow: a row of the group written at the next barrier (changed
	// in the epoch, still there) carries its idle clock (stampClocks).
	clockRow bool
}

type joinRow struct {
	enc     string
	count   int64
	matches int64
	// pinned is the part of matches from partners the watermark freed
	// (outer, semi and anti joins): they are gone from state, so load
	// cannot recompute it, and it is stored with the row.
	pinned int64
	dirty  bool // listed in Op.dirty
	// delta: count is a change over the count in the state table, not yet
	// read (a row of a partial side; writeDirty or loadSide resolves it).
	delta bool
}

const joinIndexAt = 16

// find returns the position of the row enc on side, or -1.
func (g *joinGroup) find(side int, enc string) int {
	if m := g.idx[side]; m != nil {
		if i, ok := m[enc]; ok {
			return int(i)
		}
		return -1
	}
	for i := range g.rows[side] {
		if g.rows[side][i].enc == enc {
			return i
		}
	}
	return -1
}

// insert adds a row; pointers into the side's rows are void afterwards.
func (g *joinGroup) insert(side int, r joinRow) *joinRow {
	rows := append(g.rows[side], r)
	g.rows[side] = rows
	switch {
	case g.idx[side] != nil:
		g.idx[side][r.enc] = int32(len(rows) - 1)
	case len(rows) > joinIndexAt:
		m := make(map[string]int32, len(rows))
		for i := range rows {
			m[rows[i].enc] = int32(i)
		}
		g.idx[side] = m
	}
	return &rows[len(rows)-1]
}

// remove takes out the row at i (the last row moves into its place).
func (g *joinGroup) remove(side, i int) {
	rows := g.rows[side]
	last := len(rows) - 1
	if m := g.idx[side]; m != nil {
		delete(m, rows[i].enc)
		if i != last {
			m[rows[last].enc] = int32(i)
		}
	}
	rows[i] = rows[last]
	rows[last] = joinRow{}
	g.rows[side] = rows[:last]
}

type joinRef struct {
	side     int
	key, enc string
}

// New makes an instance of a join: spec is the join, nd what the runtime
// gives the instance. A durable job's instance then loads its state (Load).
func New(spec *Spec, nd Node) *Op {
	s := spec
	o := &Op{spec: s, op: nd.ID, out: nd.Out, ttlOf: nd.TTL}
	o.store = store{groups: map[string]*joinGroup{}, st: nd.State, budget: nd.Budget,
		committed: nd.Committed, opBytes: nd.Bytes, evictedN: nd.Evicted}
	o.ts = [2][]types.T{s.LeftTs, s.RightTs}
	o.keys = [2][]expr.Expr{s.LeftKeys, s.RightKeys}
	o.outTs = s.OutTs
	o.semi = s.Kind == Semi || s.Kind == Anti
	o.preserve = [2]bool{s.Kind == Left || s.Kind == Full, s.Kind == Right || s.Kind == Full}
	o.tw.wm = op.NoWatermark
	o.lk.on = s.Lookup
	o.ttl.never = s.Lookup
	if o.tw.spec = s.Time; o.tw.spec != nil && o.lk.on {
		o.tw.spec = nil
	}
	if o.tw.spec != nil {
		o.tw.logs = nd.Late
	}
	o.store.lazy = !o.semi && !o.preserve[0] && !o.preserve[1] && o.tw.spec == nil && !o.lk.on
	if o.semi || o.preserve[0] || o.preserve[1] {
		o.store.recount = func(ectx *expr.Ctx, g *joinGroup) error { return o.pairs(ectx, g, countMatches) }
	}
	return o
}

func (o *Op) emitRows(ectx *expr.Ctx) error {
	if o.buf == nil || o.buf.N == 0 {
		return nil
	}
	return o.out.Emit(ectx, o.buf.Chunk())
}

// maxJoinCandidates bounds the pairs of rows a join considers at once:
// a batch whose rows have more (many rows of the other side per key, all
// of them in a join without keys) is joined a part at a time, so memory
// follows the part, not the batch times the other side.
const maxJoinCandidates = 64 << 10

func (o *Op) Push(ectx *expr.Ctx, c op.Chunk, side int) error {
	if o.lk.on && side == 0 {
		o.lk.hold(o, c)
		return nil
	}
	if o.tw.spec != nil {
		var err error
		if c, err = o.dropLate(ectx, c, side); err != nil {
			return err
		}
	}
	return o.pushParts(ectx, c, side)
}

// pushParts joins the rows of c (owning its record), a part at a time.
func (o *Op) pushParts(ectx *expr.Ctx, c op.Chunk, side int) error {
	defer c.Rec.Release()
	n := int(c.Rec.NumRows())
	for lo := 0; lo < n; {
		part := c
		if lo == 0 {
			c.Rec.Retain()
		} else {
			part.Rec = c.Rec.NewSlice(int64(lo), int64(n))
			if c.Ops != nil {
				part.Ops = c.Ops[lo:]
			}
		}
		done, err := o.pushRows(ectx, part, side)
		if err != nil {
			return err
		}
		lo += done
	}
	return nil
}

// pushRows joins the first rows of c, as many as keep the candidate pairs
// within maxJoinCandidates (at least one), and returns how many; it owns
// c.Rec.
func (o *Op) pushRows(ectx *expr.Ctx, c op.Chunk, side int) (int, error) {
	rec := c.Rec
	defer rec.Release()
	if o.buf == nil {
		o.buf = opkit.NewRowsOut(o.outTs)
	}
	n := int(rec.NumRows())
	keys := o.keyCols[:0]
	defer func() { opkit.ReleaseAll(keys); clear(keys) }()
	for _, k := range o.keys[side] {
		a, err := expr.Eval(ectx, k, rec)
		if err != nil {
			return 0, err
		}
		keys = append(keys, a)
	}
	accum.CanonKeys(ectx, keys, o.keys[side])
	o.keyCols = keys
	h := accum.HashColumns(nil, keys, n)
	keyTs := expr.Types(o.keys[side])
	var tcol *array.Int64 // event time of the rows, when the watermark frees them
	if o.tw.spec != nil {
		tcol = o.timeCol(rec, keys, side)
	}
	// Keys and rows are encoded a column at a time; a key is copied into
	// a string only for a new group, a row shares one string per batch.
	o.keyEnc.EncodeKeys(keys, keyTs, n)
	o.rowEnc.Encode(rec.Columns()[:len(o.ts[side])], o.ts[side], n)
	var null []bool
	for _, k := range keys {
		if k.NullN() > 0 {
			null = make([]bool, n)
			for i := range null {
				null[i] = AnyNull(keys, i)
			}
			break
		}
	}
	isNull := func(i int) bool { return null != nil && null[i] }
	other := 1 - side
	// The candidates: each row with the other side's rows of its key.
	pi, qenc, qrow := o.pi[:0], o.qenc[:0], o.qrow[:0]
	groups := o.rowGroups[:0]
	for i := 0; i < n; i++ {
		var g *joinGroup
		if !isNull(i) {
			g = o.store.groups[opkit.BytesView(o.keyEnc.Row(i))]
			if g == nil && o.store.spilled && o.store.readable(opkit.BytesView(o.keyEnc.Row(i))) {
				var err error
				if g, err = o.store.readBack(ectx, string(o.keyEnc.Row(i)), h[i], side); err != nil {
					return 0, err
				}
			}
			if g != nil && g.partial[other] {
				if err := o.store.loadSide(g, other); err != nil {
					return 0, err
				}
			}
		}
		groups = append(groups, g)
		if g == nil {
			continue
		}
		g.need[other] = o.store.tick
		for k := range g.rows[other] {
			q := &g.rows[other][k] // the other side's rows do not move in this push
			pi, qenc, qrow = append(pi, i), append(qenc, q.enc), append(qrow, q)
		}
		if len(pi) >= maxJoinCandidates {
			n = i + 1 // the rest of the batch is another part
		}
	}
	o.pi, o.qenc, o.qrow, o.rowGroups = pi, qenc, qrow, groups
	defer clear(groups)
	defer func() { clear(o.qenc[:len(qenc)]); clear(o.qrow[:len(qrow)]) }()
	pass, err := o.residual(ectx, rec, side, pi, qenc)
	if err != nil {
		return 0, err
	}
	ci := 0
	for i := 0; i < n; i++ {
		s := int64(1)
		if c.Ops != nil {
			s = int64(c.Ops[i].Sign())
		}
		enc := o.rowEnc.RowString(i)
		if c.Ops != nil || o.store.spilled {
			// Rows that may go again get their own copy, so a row kept
			// does not keep its batch's other rows alive; so do all rows
			// once the state spills, or the rows left in memory would keep
			// the batches of the evicted ones (their memory would follow
			// the input, not the cache).
			enc = string(o.rowEnc.Row(i))
		}
		key := ""
		if isNull(i) {
			// A NULL key matches nothing, ever. The rows that show anyway
			// (outer, anti) are kept under nullKey, which no key equals,
			// so an upgraded view can rebuild them from state.
			keep := o.preserve[side] && !o.semi || o.spec.Kind == Anti && side == 0
			if !keep {
				continue
			}
			o.addSide(o.buf, s, rec, i, side, "")
			key = nullKey
		}
		var matched int64
		for ; ci < len(pi) && pi[ci] == i; ci++ {
			if pass != nil && !pass[ci] {
				continue
			}
			q := qrow[ci]
			matched += q.count
			if !o.semi {
				for range q.count {
					o.buf.AddPair(&o.ts, s, rec, i, side, qenc[ci])
				}
			}
			if !o.semi && !o.preserve[other] {
				continue // inner, or the outer side of a left/right join: no transitions
			}
			before := q.matches
			q.matches += s
			after := q.matches
			switch {
			case o.semi && other == 0:
				// q is a left row: it goes out (semi) or away (anti) when
				// its matches leave zero, and back when they return to it.
				sign := int64(0)
				if before <= 0 && after > 0 {
					sign = 1
				} else if before > 0 && after <= 0 {
					sign = -1
				}
				if o.spec.Kind == Anti {
					sign = -sign
				}
				for k := int64(0); sign != 0 && k < q.count; k++ {
					o.addSide(o.buf, sign, nil, -1, other, qenc[ci])
				}
			case !o.semi && o.preserve[other]:
				sign := int64(0)
				if before <= 0 && after > 0 {
					sign = -1 // its NULL-padded row goes
				} else if before > 0 && after <= 0 {
					sign = 1 // and comes back
				}
				for k := int64(0); sign != 0 && k < q.count; k++ {
					o.addSide(o.buf, sign, nil, -1, other, qenc[ci])
				}
			}
		}
		switch {
		case isNull(i):
		case o.semi && side == 0:
			if (o.spec.Kind == Semi) == (matched > 0) {
				o.addSide(o.buf, s, rec, i, side, "")
			}
		case !o.semi && o.preserve[side] && matched == 0:
			o.addSide(o.buf, s, rec, i, side, "")
		}
		if o.lk.on && side == 0 {
			// A lookup join keeps no left row: it is joined once.
			if o.buf.N >= 16<<10 {
				if err := o.emitRows(ectx); err != nil {
					return 0, err
				}
			}
			continue
		}
		g := groups[i]
		switch {
		case key == nullKey:
			g = o.store.groups[nullKey]
		case g == nil || g.gone:
			// Made or removed by an earlier row of this batch.
			g = o.store.groups[opkit.BytesView(o.keyEnc.Row(i))]
		}
		if g == nil {
			if key == "" {
				key = string(o.keyEnc.Row(i))
			}
			g = &joinGroup{kg: byte(op.KeyGroup(h[i])), key: key, hash: h[i]}
			o.store.groups[key] = g
			o.store.bytes += joinGroupBytes + int64(len(key))
		}
		o.ttl.touch(g)
		g.used = o.store.tick
		var r *joinRow
		at := g.find(side, enc)
		if at < 0 {
			at = len(g.rows[side])
			if at == 0 {
				g.need[side] = o.store.tick
			}
			r = g.insert(side, joinRow{enc: enc, matches: matched, delta: g.partial[side]})
			o.store.bytes += joinRowBytes + int64(len(enc))
			if tcol != nil && tcol.IsValid(i) {
				o.noteExpiry(g, side, enc, tcol.Value(i))
			}
		} else {
			r = &g.rows[side][at]
		}
		r.count += s
		g.clockRow = r.count > 0
		if !r.dirty {
			r.dirty = true
			o.store.dirty = append(o.store.dirty, joinDirty{g: g, side: side, enc: enc})
		}
		if r.count <= 0 && !g.partial[side] {
			g.remove(side, at)
			o.store.bytes -= joinRowBytes + int64(len(enc))
			if len(g.rows[0]) == 0 && len(g.rows[1]) == 0 {
				o.store.dropEmpty(g)
			}
		}
		if o.buf.N >= 16<<10 {
			if err := o.emitRows(ectx); err != nil {
				return 0, err
			}
		}
	}
	return n, o.emitRows(ectx)
}

// residual evaluates the join's residual condition over the candidate
// pairs (row pi[k] of rec on side, stored row qenc[k] on the other); nil
// means every pair passes.
func (o *Op) residual(ectx *expr.Ctx, rec arrow.RecordBatch, side int, pi []int, qenc []string) ([]bool, error) {
	if o.spec.Residual == nil || len(pi) == 0 {
		return nil, nil // every pair passes
	}
	pass := make([]bool, len(pi))
	cols := make([]arrow.Array, 0, len(o.ts[0])+len(o.ts[1]))
	for s := 0; s < 2; s++ {
		if s == side {
			for c, t := range o.ts[s] {
				cols = append(cols, opkit.TakeArray(rec.Column(c), pi, t))
			}
			continue
		}
		d := opkit.DecodeRecord(o.ts[s], qenc)
		for c := range o.ts[s] {
			col := d.Column(c)
			col.Retain()
			cols = append(cols, col)
		}
		d.Release()
	}
	pairs := opkit.NewRecord(append(append([]types.T(nil), o.ts[0]...), o.ts[1]...), cols, len(pi))
	defer pairs.Release()
	mask, err := expr.Eval(ectx, o.spec.Residual, pairs)
	if err != nil {
		return nil, err
	}
	defer mask.Release()
	b := mask.(*array.Boolean)
	for k := range pass {
		pass[k] = b.IsValid(k) && b.Value(k)
	}
	return pass, nil
}

// Barrier writes the rows that changed in the epoch.
func (o *Op) Barrier(ectx *expr.Ctx, b *op.Barrier, w *storage.Batch) error {
	if o.lk.on {
		if err := o.lk.flush(ectx, o); err != nil {
			return err
		}
	} else if err := o.expireIdle(ectx); err != nil {
		return err
	}
	if err := o.freeByWatermark(ectx); err != nil {
		return err
	}
	o.store.stampClocks(&o.ttl)
	if w != nil {
		for _, d := range o.store.dirty {
			d.g.saved = b.Epoch
		}
	}
	wrote, err := o.store.st.Commit(w, b, len(o.store.dirty) > 0, o.ttl.on, func(w *opkit.Writer) error { return o.store.writeDirty(w, o.ttl.on) }, o.Snapshot)
	if cerr := o.store.closeCursor(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if !wrote { // writeDirty clears the rows' flags as it writes them
		for _, d := range o.store.dirty {
			if i := d.g.find(d.side, d.enc); i >= 0 {
				d.g.rows[d.side][i].dirty = false
			}
		}
	}
	clear(o.store.dirty)
	o.store.dirty = o.store.dirty[:0]
	if w != nil {
		o.store.settleEmptied(b.Epoch, o.store.committed.Load())
		o.store.evict(o.store.committed.Load())
	}
	o.store.tick++
	o.ReportBytes()
	return nil
}

// ReportBytes adds the change of the join's state size to the job's opBytes.
func (o *Op) ReportBytes() {
	o.store.opBytes.Add(o.store.bytes - o.store.reported)
	o.store.reported = o.store.bytes
}

// A join row's state value is uvarint(count), then optional fields, each
// after a tag byte: 'p' uvarint(pinned), the matches the row keeps of
// partners the watermark freed; 't' and 8 bytes (µs, big-endian), its
// group's idle clock while state.ttl is on. Earlier versions read the
// count and ignore the rest.
const (
	joinPinnedTag = 'p'
	joinClockTag  = 't'
)

// appendJoinValue appends a row's state value (pinned and clock 0: none).
func appendJoinValue(b []byte, count, pinned, clock int64) []byte {
	b = binary.AppendUvarint(b, uint64(count))
	if pinned > 0 {
		b = binary.AppendUvarint(append(b, joinPinnedTag), uint64(pinned))
	}
	if clock > 0 {
		b = binary.BigEndian.AppendUint64(append(b, joinClockTag), uint64(clock))
	}
	return b
}

// decodeJoinValue reads a row's state value.
func decodeJoinValue(v []byte) (count, pinned, clock int64, err error) {
	c, rest, err := opkit.ReadUvarint(v)
	if err != nil {
		return 0, 0, 0, err
	}
	count = int64(c)
	for len(rest) > 0 {
		switch rest[0] {
		case joinPinnedTag:
			var p uint64
			if p, rest, err = opkit.ReadUvarint(rest[1:]); err != nil {
				return 0, 0, 0, err
			}
			pinned = int64(p)
		case joinClockTag:
			if len(rest) < 9 {
				return 0, 0, 0, opkit.ErrCorruptState
			}
			clock = int64(binary.BigEndian.Uint64(rest[1:9]))
			rest = rest[9:]
		default:
			return 0, 0, 0, opkit.ErrCorruptState
		}
	}
	return count, pinned, clock, nil
}

// Snapshot encodes every row of every group as writeDirty writes its
// entry, sorted by key (memory backend: storage.OpSnapshot; a memory job
// never evicts, so every group is here).
//
// It sizes the snapshot's buffers first (a pass that adds up the entries'
// lengths), so they are allocated once: grown by append, the buffers of a
// large join's snapshot ended up to a quarter larger than their contents
// and, while the last growth copied them, were held twice.
func (o *Op) Snapshot(epoch uint64) *opkit.Snapshot {
	s := opkit.NewSnapshot(o.op, epoch)
	var key, val []byte
	each := func(f func(g *joinGroup, side int, r *joinRow)) {
		for _, g := range o.store.groups {
			for side := range g.rows {
				for i := range g.rows[side] {
					if r := &g.rows[side][i]; r.count > 0 {
						f(g, side, r)
					}
				}
			}
		}
	}
	clockOf := func(g *joinGroup) int64 {
		if o.ttl.on {
			return g.idle
		}
		return 0
	}
	var n, size int
	each(func(g *joinGroup, side int, r *joinRow) {
		n++
		size += 2 + opkit.UvarintLen(uint64(len(g.key))) + len(g.key) + len(r.enc) +
			len(appendJoinValue(val[:0], r.count, r.pinned, clockOf(g)))
	})
	s.Entries.Reserve(n, size)
	each(func(g *joinGroup, side int, r *joinRow) {
		key = binary.AppendUvarint(append(key[:0], g.kg, byte(side)), uint64(len(g.key)))
		key = append(append(key, g.key...), r.enc...)
		s.Entries.AddKV(0, key, appendJoinValue(val[:0], r.count, r.pinned, clockOf(g)))
	})
	s.Entries.Sort()
	return s
}

// Load restores, from st, the rows of the key groups instance inst of par owns and
// recomputes their match counts.
func (o *Op) Load(ectx *expr.Ctx, st opkit.State, inst, par int) error {
	o.store.st = st
	err := o.store.st.Scan(func(key, val []byte) error {
		if len(key) < 3 || op.InstanceOf(int(key[0]), par) != inst {
			return nil
		}
		side := int(key[1])
		klen, rest, err := opkit.ReadUvarint(key[2:])
		if err != nil || uint64(len(rest)) < klen || side > 1 {
			return opkit.ErrCorruptState
		}
		count, pinned, clock, err := decodeJoinValue(val)
		if err != nil {
			return err
		}
		k := string(rest[:klen])
		g := o.store.groups[k]
		if g == nil {
			g = &joinGroup{kg: key[0], key: k, hash: o.keyHash(k)}
			o.store.groups[k] = g
			o.store.bytes += joinGroupBytes + int64(len(k))
		}
		g.idle = max(g.idle, clock)
		enc := string(rest[klen:])
		g.insert(side, joinRow{enc: enc, count: count, matches: pinned, pinned: pinned})
		o.store.bytes += joinRowBytes + int64(len(enc))
		if o.tw.spec != nil {
			o.noteLoaded(g, side, enc)
		}
		return nil
	})
	if err != nil {
		return err
	}
	o.store.st.Loaded()
	if !o.semi && !o.preserve[0] && !o.preserve[1] {
		if !o.deferEvict {
			o.store.evict(^uint64(0)) // all of it is committed
		}
		return nil // inner joins never read match counts
	}
	for _, g := range o.store.groups {
		if err := o.store.recount(ectx, g); err != nil {
			return err
		}
	}
	return nil // the first barrier evicts what is over the budget
}

// keyHash is the hash of an encoded join key, as hashColumns gives it for
// the key's columns.
func (o *Op) keyHash(key string) uint64 {
	if key == nullKey {
		return 0
	}
	return accum.EncodedKeyHash(key, expr.Types(o.keys[0]))
}

// pairs calls fn for each pair of a group's rows that passes the residual.
func (o *Op) pairs(ectx *expr.Ctx, g *joinGroup, fn func(l, r *joinRow, lenc, renc string)) error {
	if len(g.rows[0]) == 0 || len(g.rows[1]) == 0 {
		return nil
	}
	var lenc, renc []string
	var lrow, rrow []*joinRow
	for i := range g.rows[0] {
		for k := range g.rows[1] {
			r, r2 := &g.rows[0][i], &g.rows[1][k]
			lenc, renc = append(lenc, r.enc), append(renc, r2.enc)
			lrow, rrow = append(lrow, r), append(rrow, r2)
		}
	}
	left := opkit.DecodeRecord(o.ts[0], lenc)
	idx := make([]int, len(lenc))
	for i := range idx {
		idx[i] = i
	}
	pass, err := o.residual(ectx, left, 0, idx, renc)
	left.Release()
	if err != nil {
		return err
	}
	for k := range lrow {
		if pass == nil || pass[k] {
			fn(lrow[k], rrow[k], lenc[k], renc[k])
		}
	}
	return nil
}

// countMatches counts a pair in both rows' matches (pairs).
func countMatches(l, r *joinRow, _, _ string) {
	l.matches += r.count
	r.matches += l.count
}

// DeferEviction makes Load keep every group it reads until the first
// barrier, so ReemitAll after it sees them all (groups evicted at load
// would be missing from the rows re-emitted).
func (o *Op) DeferEviction() { o.deferEvict = true }

// ReemitAll emits the join's whole output as it stands in its state (a
// view upgraded from a savepoint rebuilds its rows from state).
func (o *Op) ReemitAll(ectx *expr.Ctx) error {
	if o.buf == nil {
		o.buf = opkit.NewRowsOut(o.outTs)
	}
	for _, g := range o.store.groups {
		if !o.semi {
			err := o.pairs(ectx, g, func(l, r *joinRow, lenc, renc string) {
				for range l.count * r.count {
					o.buf.AppendSide(0, o.ts[0], nil, -1, lenc)
					o.buf.AppendSide(len(o.ts[0]), o.ts[1], nil, -1, renc)
					o.buf.AddOp(types.ChangeInsert)
				}
			})
			if err != nil {
				return err
			}
		}
		for side := 0; side < 2; side++ {
			for _, r := range g.rows[side] {
				enc := r.enc
				emit := false
				switch {
				case o.semi:
					emit = side == 0 && (o.spec.Kind == Semi) == (r.matches > 0)
				case o.preserve[side]:
					emit = r.matches == 0
				}
				for k := int64(0); emit && k < r.count; k++ {
					o.addSide(o.buf, 1, nil, -1, side, enc)
				}
			}
		}
		if o.buf.N >= 16<<10 {
			if err := o.emitRows(ectx); err != nil {
				return err
			}
		}
	}
	return o.emitRows(ectx)
}

// addSide appends a row of one side alone to r: NULL-padded for an outer
// join, the left row for a semi or anti join.
func (o *Op) addSide(r *opkit.RowsOut, sign int64, rec arrow.RecordBatch, i, side int, enc string) {
	if o.semi {
		r.AppendSide(0, o.ts[0], rec, i, enc)
	} else if side == 0 {
		r.AppendSide(0, o.ts[0], rec, i, enc)
		r.AppendSide(len(o.ts[0]), o.ts[1], nil, -1, "")
	} else {
		r.AppendSide(0, o.ts[0], nil, -1, "")
		r.AppendSide(len(o.ts[0]), o.ts[1], rec, i, enc)
	}
	r.AddOp(opkit.OpOf(sign))
}
