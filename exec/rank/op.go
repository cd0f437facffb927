// Package rank is the top-N operator family: ORDER BY ... LIMIT in a view
// (one partition); ROW_NUMBER/RANK/DENSE_RANK OVER (PARTITION BY ...) with
// the bound an outer filter puts on them (top-N per group); the window
// functions a view computes over its partitions (with exec/over's
// kernels); the append-only variant that keeps only each partition's top;
// the top-N per window, whose partitions the watermark frees (late.go);
// and its share of state.ttl (ttl.go). The plan node, how a partition key
// bounds windows (traced through the plan under it) and the wiring into a
// job stay in exec (rankop.go, lateranks.go).
//
// It implements the operator contract (exec/op), reaches its state only
// through opkit.State and emits through op.Outlet; it imports neither the
// runtime nor another operator family.
package rank

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/over"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Spec is a rank node as its operator runs it: ORDER BY ... LIMIT (Funcs
// nil: emit the rows at positions [Lo, Hi) of the order) or window
// functions over partitions (emit the rows with their functions' values;
// Hi bounds the first function's value when an outer filter does).
type Spec struct {
	Funcs     []over.Func // the window's functions, nil for ORDER BY ... LIMIT
	InTs      []types.T   // the input's columns
	OutTs     []types.T   // the output's: the input's, then Funcs'
	Partition []expr.Expr
	Order     []over.SortKey
	Lo, Hi    int64 // Hi < 0: unbounded
	// Win is a partition key that bounds windows (top-N per window; nil:
	// none).
	Win *opkit.WindowClose
	// AppendOnly: the input never retracts and Hi bounds the rank, so a
	// partition keeps only its top (Op.appendOnly).
	AppendOnly bool
}

// Node is what the runtime gives a rank instance.
type Node struct {
	opkit.Node
	// Late is the late-row log of a top-N per window (nil: not recorded).
	Late *opkit.LateLog
}

// Op is one instance of a rank node: ORDER BY ... LIMIT in a view
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
type Op struct {
	// snap is the last snapshot, kept while nothing changes (memory backend).
	st    opkit.State // its state, whichever backend holds it
	spec  *Spec
	op    uint32
	inTs  []types.T
	outTs []types.T
	parts map[string]*rankPart
	dirty map[string]struct{}
	// dirtyRows lists the rows changed in the epoch (a row may be listed
	// more than once; each is written as it stands at the barrier).
	dirtyRows []rankDirty
	out       op.Outlet
	keyEnc    opkit.RowEncoder
	rowEnc    opkit.RowEncoder
	sk        opkit.SortedKeys // reused by writeDirty

	// The state cache (durable jobs), as the join's: once bytes passes
	// budget, partitions whose state is committed are evicted at a barrier
	// and read back from the state table when their key returns. (The one
	// partition of ORDER BY ... LIMIT is never evicted.)
	bytes    int64
	reported int64
	budget   int64
	spilled  bool
	evicted  opkit.EvictedFilter
	// committed, opBytes, evictedN and ttlOf are the job's (Node).
	committed         *atomic.Uint64
	opBytes, evictedN *atomic.Int64
	ttlOf             func() int64
	// tick counts the barriers; a partition notes it when a row uses it
	// (opkit.EvictOldest: the partitions used longest ago are evicted first).
	tick uint64

	// Top-N per window (late.go): wm is the watermark of the last
	// barrier, late the rows dropped since, evictedWins the evicted
	// partitions' keys by window bound, freed the partitions freed.
	wm          int64
	late        int64
	lateLog     *opkit.LateLog
	evictedWins map[int64][]string
	freed       int64
	ttl         rankTTL // state.ttl (ttl.go)

	// appendOnly: the input never retracts (AppendOnly; the graph's
	// retracts flag), so a row that falls out of a partition's top can
	// never come back into it (every rank only grows as rows are added)
	// and is dropped at the barrier: the state is each partition's top.
	appendOnly bool
}

// rankRowBytes estimates the memory of a map entry besides its encoding.
const rankRowBytes = 48

// rankPartBytes estimates a partition's memory besides its rows: the
// struct and its three maps (rows, out, top), which cost a table group of
// eight slots each however few rows they hold (a top-1 partition's maps
// hold one row each; counting them as 48 bytes left the rank operator of
// q9 at 2.5 times its share of the state cache, never evicting).
const rankPartBytes = 160 + 3*256

func mapBytes(m map[string]int64) int64 {
	var n int64
	for enc := range m {
		n += rankRowBytes + int64(len(enc))
	}
	return n
}

type rankDirty struct {
	p   *rankPart
	enc string
}

type rankPart struct {
	kg   byte
	key  string           // its key in parts
	gone bool             // removed from parts (a partition of its key may come anew)
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
	hash  uint64
	// saved is the epoch whose commit holds the partition's last change;
	// used the operator's tick when a row last used it; outBytes the
	// estimated memory of top and out.
	saved, used uint64
	outBytes    int64
	// thin: the partition's rows are only in the state table (too many to
	// keep, as in ORDER BY ... LIMIT over a whole stream); delta holds the
	// changes since the last barrier. While rows are only added, top and
	// the added rows give the output; a retraction reads the rows back.
	thin  bool
	delta map[string]int64
	// bound is the partition's window bound (top-N per window), decoded
	// from its key once (boundSet).
	bound               int64
	boundNull, boundSet bool
	// state.ttl (ttl.go): idle is the time of the last barrier after a
	// row changed the partition.
	idle            int64
	touched, queued bool
	// evicted: it went to the state table (queued there while the TTL is
	// on, ttl.go); reloaded: a row of its key has read it back since.
	evicted, reloaded bool
}

// New makes an instance of a rank: spec is the node, nd what the runtime
// gives the instance. A durable job's instance then loads its state (Load).
func New(spec *Spec, nd Node) *Op {
	return &Op{spec: spec, op: nd.ID, parts: map[string]*rankPart{}, dirty: map[string]struct{}{},
		wm: op.NoWatermark, st: nd.State, out: nd.Out, budget: nd.Budget, lateLog: nd.Late,
		committed: nd.Committed, opBytes: nd.Bytes, evictedN: nd.Evicted, ttlOf: nd.TTL,
		appendOnly: spec.AppendOnly, inTs: spec.InTs, outTs: spec.OutTs,
		ttl: rankTTL{never: spec.Win != nil}}
}

// AppendOnly says the instance keeps only each partition's top.
func (o *Op) AppendOnly() bool { return o.appendOnly }

func (o *Op) Push(ectx *expr.Ctx, c op.Chunk, _ int) error {
	rec := c.Rec
	defer rec.Release()
	n := int(rec.NumRows())
	keys := make([]arrow.Array, len(o.spec.Partition))
	defer opkit.ReleaseAll(keys)
	for i, k := range o.spec.Partition {
		var err error
		if keys[i], err = expr.Eval(ectx, k, rec); err != nil {
			return err
		}
	}
	accum.CanonKeys(ectx, keys, o.spec.Partition)
	h := accum.HashColumns(nil, keys, n)
	// Keys and rows are encoded a column at a time; a key is copied into
	// a string only for a new partition, a row shares one string per batch.
	o.keyEnc.EncodeKeys(keys, expr.Types(o.spec.Partition), n)
	o.rowEnc.Encode(rec.Columns()[:len(o.inTs)], o.inTs, n)
	hopTS, err := o.lateHopTimes(ectx, rec)
	if err != nil {
		return err
	}
	defer hopTS.Release()
	var p *rankPart
	for i := 0; i < n; i++ {
		if o.isLate(rec, keys, hopTS, i) {
			continue
		}
		enc := o.rowEnc.RowString(i)
		if c.Ops != nil {
			enc = string(o.rowEnc.Row(i)) // as in joinOp.push
		}
		if key := o.keyEnc.Row(i); p == nil || p.gone || p.key != opkit.BytesView(key) {
			p = o.parts[opkit.BytesView(key)]
			if p == nil && o.spilled && len(key) > 0 && o.evicted.MayContain(h[i]) {
				var err error
				if p, err = o.reload(ectx, string(key), byte(op.KeyGroup(h[i])), h[i]); err != nil {
					return err
				}
			}
			if p == nil {
				p = &rankPart{kg: byte(op.KeyGroup(h[i])), key: string(key), rows: map[string]int64{}, out: map[string]int64{}, top: map[string]int64{}, hash: h[i]}
				o.parts[p.key] = p
				o.bytes += rankPartBytes + int64(len(p.key))
			}
			o.dirty[p.key] = struct{}{}
			p.used = o.tick
			o.ttl.touch(p)
		}
		s := int64(1)
		if c.Ops != nil {
			s = int64(c.Ops[i].Sign())
		}
		if s > 0 {
			p.added = append(p.added, enc)
		} else if o.appendOnly {
			return errRetractAppendOnly
		} else {
			p.full = true
		}
		rows := p.rows
		if p.thin {
			rows = p.delta
		}
		old, had := rows[enc]
		if !had {
			o.bytes += rankRowBytes + int64(len(enc))
		}
		if rows[enc] = old + s; rows[enc] == 0 || rows[enc] < 0 && !p.thin {
			delete(rows, enc)
			o.bytes -= rankRowBytes + int64(len(enc))
		}
		if !o.appendOnly { // append-only: applyResult lists what changed in the top
			o.dirtyRows = append(o.dirtyRows, rankDirty{p: p, enc: enc})
		}
	}
	return nil
}

// errRetractAppendOnly: the inference that the input only inserts was wrong.
var errRetractAppendOnly = sqlerr.New(sqlerr.Internal, "exec: a retraction reached a top-N whose input was inferred append-only")

// barrier emits, for each partition that changed, the difference between
// its new top rows and those it emitted, and writes the changed rows.
func (o *Op) Barrier(ectx *expr.Ctx, b *op.Barrier, w *storage.Batch) error {
	keys := make([]string, 0, len(o.dirty))
	for k := range o.dirty {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf := opkit.NewRowsOut(o.outTs)
	// Partitions are computed in batches of about 64K candidate rows:
	// one decoded record and one evaluation of the order for all of them.
	var batch []string
	var inputs []map[string]int64
	size := 0
	for x, k := range keys {
		p := o.parts[k]
		candidates := p.rows
		if p.thin && p.full {
			var err error
			if candidates, err = o.thinRows(p); err != nil {
				return err
			}
			if len(candidates) == 0 { // it emptied: an ordinary partition again
				p.thin, p.rows = false, map[string]int64{}
			}
		}
		if !p.full {
			candidates = maps.Clone(p.top)
			for _, enc := range p.added {
				candidates[enc]++
			}
		}
		batch, inputs = append(batch, k), append(inputs, candidates)
		size += len(candidates)
		if size < 64<<10 && x < len(keys)-1 {
			continue
		}
		results, err := o.computeMany(ectx, inputs)
		if err != nil {
			return err
		}
		for i, k := range batch {
			if err := o.applyResult(ectx, buf, k, results[i]); err != nil {
				return err
			}
		}
		clear(inputs)
		batch, inputs, size = batch[:0], inputs[:0], 0
	}
	clear(o.dirty)
	if buf.N > 0 {
		if err := o.out.Emit(ectx, buf.Chunk()); err != nil {
			return err
		}
	}
	if err := o.freeClosed(ectx); err != nil {
		return err
	}
	touched := len(o.ttl.touched) > 0 // their idle clocks restart
	if err := o.expireIdle(ectx, time.Now().UnixMicro()); err != nil {
		return err
	}
	if w != nil {
		for _, d := range o.dirtyRows {
			d.p.saved = b.Epoch
		}
	}
	if _, err := o.st.Commit(w, b, len(o.dirtyRows) > 0 || touched, o.ttl.on, o.writeDirty, o.Snapshot); err != nil {
		return err
	}
	for _, d := range o.dirtyRows {
		if d.p.thin && len(d.p.delta) > 0 {
			o.bytes -= mapBytes(d.p.delta)
			clear(d.p.delta)
		}
	}
	clear(o.dirtyRows)
	o.dirtyRows = o.dirtyRows[:0]
	if w != nil {
		o.evict(o.committed.Load())
	}
	o.tick++
	o.ReportBytes()
	return nil
}

// ReportBytes adds the change of the operator's state size to the job's opBytes.
func (o *Op) ReportBytes() {
	o.opBytes.Add(o.bytes - o.reported)
	o.reported = o.bytes
}

// evict drops partitions whose state is committed (at or before epoch
// committed), those used longest ago first (opkit.EvictOldest), until the
// estimate is below 80 % of the budget.
func (o *Op) evict(committed uint64) {
	if o.budget <= 0 || o.bytes <= o.budget {
		return
	}
	target := o.budget * 8 / 10
	if p := o.parts[""]; p != nil && p.saved <= committed && !p.thin {
		// The one partition of ORDER BY ... LIMIT: keep its top only
		// (an append-only input's partition holds only its top).
		if !o.appendOnly && o.spec.Hi >= 0 && int64(len(p.rows)) > 4*o.spec.Hi+rankPreselectMin {
			o.bytes -= mapBytes(p.rows)
			p.rows, p.thin, p.delta = nil, true, map[string]int64{}
			o.spilled = true
		}
	}
	opkit.EvictOldest(o.parts, o.tick, o.bytes-target,
		func(k string, p *rankPart) bool { return k != "" && p.saved <= committed && !p.thin },
		func(p *rankPart) uint64 { return p.used }, partBytes,
		func(_ string, p *rankPart) { o.evictPart(p) },
		func() bool { return o.bytes <= target })
}

// partBytes is the estimated memory of partition p.
func partBytes(p *rankPart) int64 {
	return mapBytes(p.rows) + p.outBytes + rankPartBytes + int64(len(p.key))
}

// evictPart drops partition p, committed, from memory: its key may be read
// back from the state table.
func (o *Op) evictPart(p *rankPart) {
	o.bytes -= partBytes(p)
	delete(o.parts, p.key)
	p.gone, p.evicted = true, true
	if p.queued {
		o.ttl.noteEvicted(p)
	}
	o.noteEvictedPart(p)
	o.evicted.Add(p.hash)
	o.spilled = true
	o.evictedN.Add(1)
}

// thinRows reads a thin partition's rows back from the state table (the
// last committed epoch) with the changes since applied.
func (o *Op) thinRows(p *rankPart) (map[string]int64, error) {
	prefix := binary.AppendUvarint([]byte{p.kg}, uint64(len(p.key)))
	prefix = append(prefix, p.key...)
	rows := map[string]int64{}
	err := o.st.ScanPrefix(prefix, func(k, v []byte) error {
		count, _, err := opkit.ReadUvarint(v)
		rows[string(k[len(prefix):])] = int64(count)
		return err
	})
	for enc, d := range p.delta {
		if rows[enc] += d; rows[enc] <= 0 {
			delete(rows, enc)
		}
	}
	return rows, err
}

// storedCount is a thin partition's committed multiplicity of row enc.
func (o *Op) storedCount(p *rankPart, enc string) (int64, error) {
	key := binary.AppendUvarint([]byte{p.kg}, uint64(len(p.key)))
	key = append(append(key, p.key...), enc...)
	v, err := o.st.Get(key)
	if err != nil || v == nil {
		return 0, err
	}
	count, _, err := opkit.ReadUvarint(v)
	return int64(count), err
}

// reload reads partition key back from the state table (nil if it has no
// rows there) and recomputes what it emitted.
func (o *Op) reload(ectx *expr.Ctx, key string, kg byte, h uint64) (*rankPart, error) {
	prefix := binary.AppendUvarint([]byte{kg}, uint64(len(key)))
	prefix = append(prefix, key...)
	rows := map[string]int64{}
	var idle int64
	err := o.st.ScanPrefix(prefix, func(k, v []byte) error {
		count, after, err := opkit.ReadUvarint(v)
		if err != nil {
			return err
		}
		rows[string(k[len(prefix):])] = int64(count)
		idle = max(idle, clockOf(after))
		return nil
	})
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	o.ttl.noteReloaded(key)
	p := &rankPart{kg: kg, key: key, rows: rows, hash: h, idle: idle, used: o.tick}
	if p.out, p.top, err = o.compute(ectx, rows); err != nil {
		return nil, err
	}
	p.outBytes = mapBytes(p.out) + mapBytes(p.top)
	o.bytes += mapBytes(rows) + p.outBytes + rankPartBytes + int64(len(key))
	o.parts[key] = p
	o.pruneLoaded(p)
	return p, nil
}

// keyHash is the hash of an encoded partition key, as hashColumns gives it
// for the key's columns.
func keyHash(spec *Spec, key string) uint64 {
	return accum.EncodedKeyHash(key, expr.Types(spec.Partition))
}

// applyResult makes partition k's new output its own and emits the
// difference from what it emitted before.
func (o *Op) applyResult(ectx *expr.Ctx, buf *opkit.RowsOut, k string, res rankResult) error {
	p := o.parts[k]
	next, top := res.out, res.top
	if o.appendOnly {
		o.keepTop(p, top)
		ownNewTop(p, top, next)
	}
	clear(p.added) // the batch strings they share must not stay reachable
	p.top, p.added, p.full = top, p.added[:0], false
	for enc, c := range p.out {
		for d := next[enc]; d < c; d++ {
			buf.AddStored(enc, types.ChangeDelete)
		}
	}
	for enc, c := range next {
		for d := p.out[enc]; d < c; d++ {
			buf.AddStored(enc, types.ChangeInsert)
		}
	}
	p.out = next
	ob := mapBytes(p.out) + mapBytes(p.top)
	o.bytes += ob - p.outBytes
	p.outBytes = ob
	if len(p.rows) == 0 && !p.thin {
		delete(o.parts, k)
		p.gone = true
		o.bytes -= p.outBytes + rankPartBytes + int64(len(p.key))
	}
	if buf.N >= 16<<10 {
		if err := o.out.Emit(ectx, buf.Chunk()); err != nil {
			return err
		}
	}
	return nil
}

// keepTop makes an append-only partition's rows its new top (a row out of
// the top can never return to it) and lists for writeDirty the rows whose
// count differs from the old top's, which is what the state table holds.
func (o *Op) keepTop(p *rankPart, top map[string]int64) {
	listed := len(o.dirtyRows)
	defer func() {
		// state.ttl: a partition's idle clock is stored with its rows and a
		// row touched it, so one of its rows carries the new clock (ttl.go)
		// even when its top did not change.
		if len(o.dirtyRows) == listed && p.touched && o.ttlOf() > 0 {
			for enc := range top {
				o.dirtyRows = append(o.dirtyRows, rankDirty{p: p, enc: enc})
				break
			}
		}
	}()
	for enc, c := range p.top {
		if top[enc] != c {
			o.dirtyRows = append(o.dirtyRows, rankDirty{p: p, enc: enc})
		}
	}
	for enc, c := range top {
		if p.top[enc] != c {
			o.dirtyRows = append(o.dirtyRows, rankDirty{p: p, enc: enc})
		}
	}
	for enc, c := range p.rows {
		if t := top[enc]; t == 0 {
			delete(p.rows, enc)
			o.bytes -= rankRowBytes + int64(len(enc))
		} else if t != c {
			p.rows[enc] = t
		}
	}
}

// ownNewTop gives the rows that entered an append-only partition's top
// their own strings (in top, the partition's rows and its output): the
// encodings Push stored share one string per input batch, and a row kept
// in the top for good would keep its whole batch alive, so the memory of
// the kept rows' batches would follow the input rather than the top.
func ownNewTop(p *rankPart, top, next map[string]int64) {
	var fresh []string
	for enc := range top {
		if _, ok := p.top[enc]; !ok {
			fresh = append(fresh, enc)
		}
	}
	for _, enc := range fresh {
		own := strings.Clone(enc)
		c := top[enc]
		delete(top, enc) // an equal key's update would keep the old string
		top[own] = c
		if c, ok := p.rows[enc]; ok {
			delete(p.rows, enc)
			p.rows[own] = c
		}
		if c, ok := next[enc]; ok {
			delete(next, enc)
			next[own] = c
		}
	}
}

// pruneLoaded drops the rows of an append-only partition read back from the
// state table that are not in its top (state written before the input was
// known to be append-only), deleting them at the next barrier.
func (o *Op) pruneLoaded(p *rankPart) {
	if !o.appendOnly {
		return
	}
	for enc, c := range p.rows {
		if t := p.top[enc]; t != c {
			o.dirtyRows = append(o.dirtyRows, rankDirty{p: p, enc: enc})
			if t == 0 {
				delete(p.rows, enc)
				o.bytes -= rankRowBytes + int64(len(enc))
			} else {
				p.rows[enc] = t
			}
		}
	}
}

// writeDirty writes the state of the rows changed in the epoch as one
// sorted run (opkit.SortedKeys: keys sorted by a 16-byte integer prefix).
func (o *Op) writeDirty(x *opkit.Writer) error {
	if len(o.dirtyRows) == 0 {
		return nil
	}
	sk := &o.sk
	sk.Reset()
	for i, d := range o.dirtyRows {
		p := d.p
		if p.gone { // its partition emptied; it may have come back
			if p = o.parts[p.key]; p == nil || p.kg != d.p.kg {
				p = nil
			}
		}
		var count int64
		if p != nil && p.thin {
			var err error
			if count, err = o.storedCount(p, d.enc); err != nil {
				return err
			}
			count += p.delta[d.enc]
		} else if p != nil {
			count = p.rows[d.enc]
		}
		sk.Add(int32(i), func(b []byte) []byte {
			b = binary.AppendUvarint(append(b, d.p.kg), uint64(len(d.p.key)))
			return append(append(b, d.p.key...), d.enc...)
		}, func(b []byte) []byte {
			if count <= 0 {
				return b
			}
			return o.ttl.appendClock(binary.AppendUvarint(b, uint64(count)), d.p)
		})
	}
	sk.Sort()
	var prev []byte
	for i, k := range sk.Keys {
		key := sk.Key(k)
		if i > 0 && bytes.Equal(key, prev) {
			continue // the same row listed twice: written the same
		}
		prev = append(prev[:0], key...)
		if v := sk.Val(k); len(v) > 0 {
			x.Put(key, v)
		} else {
			x.Delete(key)
		}
	}
	return nil
}

// Snapshot encodes every row of every partition as writeDirty writes its
// entry, sorted by key (memory backend: storage.OpSnapshot). A memory job
// never evicts, so no partition is thin. The idle clock (state.ttl) is the
// partition's on each of its rows; load keeps the largest, as on Pebble.
func (o *Op) Snapshot(epoch uint64) *opkit.Snapshot {
	s := opkit.NewSnapshot(o.op, epoch)
	var key, val []byte
	for _, p := range o.parts {
		for enc, count := range p.rows {
			if count <= 0 {
				continue
			}
			key = binary.AppendUvarint(append(key[:0], p.kg), uint64(len(p.key)))
			key = append(append(key, p.key...), enc...)
			val = o.ttl.appendClock(binary.AppendUvarint(val[:0], uint64(count)), p)
			s.Entries.AddKV(0, key, val)
		}
	}
	s.Entries.Sort()
	return s
}

// order evaluates the ORDER BY over rec and returns a three-way comparison
// of its rows; release frees the evaluated keys.
func (o *Op) order(ectx *expr.Ctx, rec arrow.RecordBatch) (cmp func(a, b int) int, release func(), err error) {
	keys := make([]arrow.Array, len(o.spec.Order))
	release = func() { opkit.ReleaseAll(keys) }
	cmps := make([]func(i, j int) int, len(o.spec.Order))
	for i, k := range o.spec.Order {
		if keys[i], err = expr.Eval(ectx, k.E, rec); err != nil {
			release()
			return nil, nil, err
		}
		cmps[i] = opkit.Comparator(keys[i], k.E.Type(), k.Desc, k.NullsFirst)
	}
	return func(a, b int) int {
		for _, c := range cmps {
			if r := c(a, b); r != 0 {
				return r
			}
		}
		return 0
	}, release, nil
}

// compute returns a partition's output rows: the rows at positions
// [lo, hi) of the order, or every row (up to the bound) with its window
// functions' values appended. Rows that tie in the order are taken in the
// order of their encoding, so equal inputs give equal outputs.
type rankResult struct{ out, top map[string]int64 }

func (o *Op) compute(ectx *expr.Ctx, rows map[string]int64) (out, top map[string]int64, err error) {
	res, err := o.computeMany(ectx, []map[string]int64{rows})
	if err != nil {
		return nil, nil, err
	}
	return res[0].out, res[0].top, nil
}

// computeMany computes several partitions' outputs (compute) over one
// record of all their rows.
func (o *Op) computeMany(ectx *expr.Ctx, inputs []map[string]int64) ([]rankResult, error) {
	results := make([]rankResult, len(inputs))
	bounds := make([]int, len(inputs)+1)
	var encs []string
	for x, rows := range inputs {
		if hi := o.spec.Hi; hi > 0 && int64(len(rows)) > 4*hi+rankPreselectMin &&
			(o.spec.Funcs == nil || o.spec.Funcs[0].Kind == over.RowNumber) {
			// Only the first hi rows of the order matter (as ROW_NUMBER
			// bounds them; RANK and DENSE_RANK may take more on ties).
			var err error
			if rows, err = o.preselect(ectx, rows, hi); err != nil {
				return nil, err
			}
		}
		start := len(encs)
		for enc, c := range rows {
			for range c {
				encs = append(encs, enc)
			}
		}
		slices.Sort(encs[start:])
		bounds[x+1] = len(encs)
	}
	rec := opkit.DecodeRecord(o.inTs, encs)
	defer rec.Release()
	cmp, release, err := o.order(ectx, rec)
	if err != nil {
		return nil, err
	}
	defer release()
	all := make([]int, len(encs))
	for i := range all {
		all[i] = i
	}
	var buf []byte
	fs := o.spec.Funcs
	values := fs != nil && !over.RankOnly(fs)
	for x := range inputs {
		out, top := map[string]int64{}, map[string]int64{}
		results[x] = rankResult{out, top}
		idx := all[bounds[x]:bounds[x+1]]
		if len(idx) == 0 {
			continue
		}
		sort.SliceStable(idx, func(a, b int) bool { return cmp(idx[a], idx[b]) < 0 })
		if values {
			continue // windowRows, once every partition is sorted
		}
		if fs == nil {
			hi := int64(len(idx))
			if o.spec.Hi >= 0 {
				hi = min(hi, o.spec.Hi)
			}
			for k := int64(0); k < hi; k++ {
				top[encs[idx[k]]]++
				if k >= o.spec.Lo {
					out[encs[idx[k]]]++
				}
			}
			continue
		}
		vals := make([]int64, len(fs))
		var rank, dense int64
		for k, r := range idx {
			if k == 0 || cmp(idx[k-1], r) != 0 {
				rank, dense = int64(k)+1, dense+1
			}
			for f, fn := range fs {
				switch fn.Kind {
				case over.RowNumber:
					vals[f] = int64(k) + 1
				case over.Rank:
					vals[f] = rank
				case over.DenseRank:
					vals[f] = dense
				}
			}
			if o.spec.Hi >= 0 && vals[0] > o.spec.Hi {
				break // every function here only grows along the order
			}
			buf = append(buf[:0], encs[r]...)
			for f, fn := range fs {
				buf = opkit.EncodeDatum(buf, types.Int(vals[f]), fn.T)
			}
			out[string(buf)]++
			top[encs[r]]++
		}
	}
	if values {
		if err := o.windowRows(ectx, rec, encs, all, bounds, cmp, results); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// windowRows computes the output rows of partitions whose window has value
// functions (lag, lead, first_value, last_value, nth_value) or aggregates
// OVER a frame: the batch kernels (over.Columns) run over the rows of all
// of them, sorted partition by partition (idx[bounds[x]:bounds[x+1]] are
// partition x's rows of rec in their order, ties by encoding), and each
// row's output is its input encoding followed by its functions' values.
func (o *Op) windowRows(ectx *expr.Ctx, rec arrow.RecordBatch, encs []string, idx, bounds []int, cmp func(a, b int) int, results []rankResult) error {
	n := len(idx)
	pids := make([]int32, n)
	spids := make([]int32, n)
	peer := make([]bool, n)
	for x := 0; x+1 < len(bounds); x++ {
		for k := bounds[x]; k < bounds[x+1]; k++ {
			spids[k] = int32(x)
			pids[idx[k]] = int32(x)
			peer[k] = k > bounds[x] && cmp(idx[k-1], idx[k]) == 0
		}
	}
	cols, err := over.Columns(&over.Env{Expr: ectx}, o.spec.Funcs, o.spec.Order, rec, idx, pids, spids, peer, len(bounds)-1)
	if err != nil {
		return err
	}
	defer opkit.ReleaseAll(cols)
	fts := o.outTs[len(o.inTs):]
	var enc opkit.RowEncoder
	enc.Encode(cols, fts, n)
	var buf []byte
	for k, r := range idx {
		buf = append(append(buf[:0], encs[r]...), enc.Row(k)...)
		res := results[spids[k]]
		res.out[string(buf)]++
		res.top[encs[r]]++
	}
	return nil
}

// rankPreselectMin: below 4*hi plus this many rows, compute sorts them all
// (a variable for tests).
var rankPreselectMin int64 = 64

// preselect returns the fewest rows, with their multiplicities, that hold
// the first hi rows of the order (ties by encoding, as compute takes them):
// a bounded heap over the distinct rows, greatest on top.
func (o *Op) preselect(ectx *expr.Ctx, rows map[string]int64, hi int64) (map[string]int64, error) {
	encs := make([]string, 0, len(rows))
	for enc := range rows {
		encs = append(encs, enc)
	}
	rec := opkit.DecodeRecord(o.inTs, encs)
	defer rec.Release()
	cmp, release, err := o.order(ectx, rec)
	if err != nil {
		return nil, err
	}
	defer release()
	less := func(a, b int) bool {
		if r := cmp(a, b); r != 0 {
			return r < 0
		}
		return encs[a] < encs[b]
	}
	h := &rankHeap{less: less}
	var total int64
	for i := range encs {
		if total >= hi && !less(i, h.idx[0]) {
			continue
		}
		heap.Push(h, i)
		total += rows[encs[i]]
		for total-rows[encs[h.idx[0]]] >= hi {
			total -= rows[encs[heap.Pop(h).(int)]]
		}
	}
	sel := make(map[string]int64, len(h.idx))
	for _, i := range h.idx {
		sel[encs[i]] = rows[encs[i]]
	}
	return sel, nil
}

// rankHeap is a max-heap of row indexes under less.
type rankHeap struct {
	idx  []int
	less func(a, b int) bool
}

func (h *rankHeap) Len() int           { return len(h.idx) }
func (h *rankHeap) Less(i, j int) bool { return h.less(h.idx[j], h.idx[i]) }
func (h *rankHeap) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *rankHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *rankHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// ReemitAll makes the next barrier emit every partition's output anew (a
// view upgraded from a savepoint rebuilds its rows from state).
func (o *Op) ReemitAll() {
	for k, p := range o.parts {
		p.out, p.full = map[string]int64{}, true
		o.dirty[k] = struct{}{}
	}
}

// Load restores, from st, the rows of the key groups instance inst of par
// owns and recomputes what each partition emitted.
func (o *Op) Load(ectx *expr.Ctx, st opkit.State, inst, par int) error {
	o.st = st
	err := o.st.Scan(func(key, val []byte) error {
		if len(key) < 2 || op.InstanceOf(int(key[0]), par) != inst {
			return nil
		}
		klen, rest, err := opkit.ReadUvarint(key[1:])
		if err != nil || uint64(len(rest)) < klen {
			return opkit.ErrCorruptState
		}
		count, after, err := opkit.ReadUvarint(val)
		if err != nil {
			return err
		}
		k := string(rest[:klen])
		p := o.parts[k]
		if p == nil {
			p = &rankPart{kg: key[0], key: k, rows: map[string]int64{}, hash: keyHash(o.spec, k)}
			o.parts[k] = p
			o.bytes += rankRowBytes + int64(len(k))
		}
		p.rows[string(rest[klen:])] = int64(count)
		p.idle = max(p.idle, clockOf(after))
		o.bytes += rankRowBytes + int64(len(rest)) - int64(klen)
		return nil
	})
	if err != nil {
		return err
	}
	o.st.Loaded()
	var batch []*rankPart
	var inputs []map[string]int64
	size, left := 0, len(o.parts)
	for _, p := range o.parts {
		batch, inputs = append(batch, p), append(inputs, p.rows)
		size += len(p.rows)
		if left--; size < 64<<10 && left > 0 {
			continue
		}
		results, err := o.computeMany(ectx, inputs)
		if err != nil {
			return err
		}
		for i, p := range batch {
			p.out, p.top = results[i].out, results[i].top
			p.outBytes = mapBytes(p.out) + mapBytes(p.top)
			o.bytes += p.outBytes
			o.pruneLoaded(p)
		}
		batch, inputs, size = batch[:0], inputs[:0], 0
	}
	return nil // the first barrier evicts what is over the budget
}
