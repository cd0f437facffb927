package join

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Interval and window joins freed by watermark.
//
// An inner equi-join whose rows can only match partners within a bounded
// stretch of event time frees its rows once the join's input watermark
// (the least of its two inputs') has passed every partner a row could
// still meet, and drops as late the rows that arrive behind it:
//
//   - Interval join: the residual has conjuncts bounding one side's
//     timestamp column by the other's, both ways (a.ts BETWEEN b.ts - X AND
//     b.ts + Y, or the >= / <= / > / < forms, with constant intervals added
//     or subtracted; a filter right over the join counts as the residual,
//     as the planner leaves a WHERE over an inner join there). A row of a then only meets rows of b with b.ts <=
//     a.ts + X, and a row of b rows of a with a.ts <= b.ts + Y. As in
//     Flink's interval join, a row whose time is behind the watermark W
//     (t < W) is late, and a row of a is freed once a.ts + X < W (b's once
//     b.ts + Y < W): every partner it could still meet would be late.
//   - Window join: a pair of join keys are, through the projections,
//     filters and window aggregates under each side (boundThrough), the
//     same bound of a window (window_end, or a tumbling window's start) on
//     both sides. A row is freed once the
//     watermark reaches its window's end, and a row whose window had ended
//     then is late; partners share the key, so they share the window.
//
// Outer, semi and anti joins are freed the same way (their ON condition
// only: see joinTimeOf). They emit a NULL-padded row (an anti join's row)
// as soon as its row comes unmatched and retract it at its first match,
// so freeing emits nothing; what load cannot recompute once partners are
// gone, the matches they made, is kept and stored as the rows' pinned
// matches (pinPartners).
//
// Each side's time is judged by its own watermark (eventtime.go): the
// WATERMARK FOR column it comes from, plus or minus a fixed interval
// (W + shift). A side whose time has none (another timestamp column, a
// computed one) never has late rows, and the other side's rows are
// never freed, since a partner can come at any time; with neither, the
// join is a plain join.
//
// A row's freeing time is noted when it enters the join's state (by
// push, or load after a restart) in a list scanned at barriers whose
// watermark reached its earliest entry. Freed rows are listed as changed
// with no count left, so the epoch's batch deletes them from the state
// table; rows of groups evicted to the state table are deleted there
// without being read back. The join's input watermark is checkpointed
// (runOp, watermarkKeeper), so rows replayed after kill -9 meet the
// watermark they met before.

// Time is how a join's rows end by watermark.
type Time struct {
	Kind string // "interval join" or "window join"
	// window join: key indexes the join keys holding the window bound;
	// interval join: col[s] is the time column of side s's input.
	Key int
	Col [2]int
	// A row of side s whose time is t is freed at a watermark W with
	// t + free[s] <= W if frees[s], and late if t + late[s] <= W on
	// arrival if lates[s]. A side whose time no watermark bounds
	// (eventtime.go) has no late rows, and the other side's rows are
	// never freed: a partner can come at any time.
	Free, Late   [2]int64
	Frees, Lates [2]bool
	// shift[s]: side s's time is its watermark column plus shift[s] µs
	// (the watermark a late row of it met, as recorded, is W + shift[s]).
	Shift [2]int64
	// window join: own[s] is how long after the key side s's window ends
	// (late[s] is the greater of both sides'), and hop[s], if side s's
	// windows are a HOP or CUMULATE stage's, tells a row's last window from
	// its others, so a row late for all its windows counts once.
	Own [2]int64
	Hop [2]*opkit.HopLast
}

// joinExpiryBytes estimates the memory of an entry of the freeing list
// (counted in the join's state bytes).
const joinExpiryBytes = 48

// joinExpiry is a stored row's freeing time.
type joinExpiry struct {
	at   int64
	g    *joinGroup
	side int
	enc  string
}

// joinWM is a join's event-time bookkeeping (nil spec: none).
type joinWM struct {
	spec    *Time
	wm      int64 // input watermark as of the last barrier
	late    int64 // rows dropped since the last advance
	logs    [2]*opkit.LateLog
	expiry  []joinExpiry
	minAt   int64 // least at in expiry
	freed   int64 // rows freed, for tests and SHOW
	keepBuf []int
}

// OpID is the join's operator id (runOp checkpoints its watermark).
func (o *Op) OpID() uint32 { return o.op }

// KeepsWatermark says whether the join acts on event time.
func (o *Op) KeepsWatermark() bool { return o.tw.spec != nil }

// TakeLate returns the late rows noted since the last call.
func (o *Op) TakeLate() []storage.LateRow {
	return opkit.MergeLate(o.tw.logs[0].Take(), o.tw.logs[1].Take())
}

// AdvanceWatermark notes the barrier's watermark: barrier frees the rows it
// passed, and the next epoch's rows are judged late against it.
func (o *Op) AdvanceWatermark(_ *expr.Ctx, wm op.Watermark) (int64, error) {
	if o.tw.spec == nil {
		return 0, nil
	}
	o.tw.wm = wm.At
	late := o.tw.late
	o.tw.late = 0
	return late, nil
}

// timeCol is the column of side's rows (rec) or keys that the join's
// freeing and lateness read; nil if not an Int64 column.
func (o *Op) timeCol(rec arrow.RecordBatch, keys []arrow.Array, side int) *array.Int64 {
	var a arrow.Array
	if o.tw.spec.Kind == "window join" {
		a = keys[o.tw.spec.Key]
	} else {
		a = rec.Column(o.tw.spec.Col[side])
	}
	c, _ := a.(*array.Int64)
	return c
}

// dropLate removes from c the rows of side behind the watermark (c.Rec
// is released if a new chunk is returned).
func (o *Op) dropLate(ectx *expr.Ctx, c op.Chunk, side int) (op.Chunk, error) {
	s := o.tw.spec
	if s == nil || o.tw.wm == op.NoWatermark || !s.Lates[side] {
		return c, nil
	}
	var col *array.Int64
	if s.Kind == "window join" {
		a, err := expr.Eval(ectx, o.keys[side][s.Key], c.Rec)
		if err != nil {
			c.Rec.Release()
			return c, err
		}
		defer a.Release()
		col, _ = a.(*array.Int64)
	} else {
		col = o.timeCol(c.Rec, nil, side)
	}
	if col == nil {
		return c, nil
	}
	n := col.Len()
	wm, lateOff := o.tw.wm, s.Late[side]
	var keep []int
	dropped := false
	var hopTS opkit.HopRows // evaluated at the first row dropped
	for i := 0; i < n; i++ {
		if col.IsValid(i) && col.Value(i)+lateOff <= wm {
			et := col.Value(i) // the row's time, or its window's end
			if s.Kind == "window join" {
				et += s.Own[side]
			}
			// A HOP or CUMULATE row is late once: by its last window's
			// copy; the copies for its other windows are dropped silently.
			last := true
			if h := s.Hop[side]; h != nil {
				if hopTS.TS == nil {
					var err error
					if hopTS, err = h.Times(ectx, c.Rec); err != nil {
						c.Rec.Release()
						return c, err
					}
					defer hopTS.Release()
				}
				last = h.IsLast(hopTS, i, et)
			}
			if last {
				o.tw.late++
				o.tw.logs[side].Note(c.Rec, i, et, wm+s.Shift[side])
			}
			if !dropped {
				dropped, keep = true, o.tw.keepBuf[:0]
				for k := 0; k < i; k++ {
					keep = append(keep, k)
				}
			}
			continue
		}
		if dropped {
			keep = append(keep, i)
		}
	}
	if !dropped {
		return c, nil
	}
	o.tw.keepBuf = keep
	out := op.Chunk{Rec: opkit.TakeRecord(c.Rec, keep, o.ts[side])}
	if c.Ops != nil {
		out.Ops = make([]types.ChangeOp, len(keep))
		for i, k := range keep {
			out.Ops[i] = c.Ops[k]
		}
	}
	c.Rec.Release()
	return out, nil
}

// noteExpiry lists a row newly stored on side of g, whose time is t.
func (o *Op) noteExpiry(g *joinGroup, side int, enc string, t int64) {
	if !o.tw.spec.Frees[side] {
		return // a partner can come at any time
	}
	at := t + o.tw.spec.Free[side]
	if len(o.tw.expiry) == 0 || at < o.tw.minAt {
		o.tw.minAt = at
	}
	o.tw.expiry = append(o.tw.expiry, joinExpiry{at: at, g: g, side: side, enc: enc})
	o.store.bytes += joinExpiryBytes
}

// noteLoaded lists a row read from the state table at startup.
func (o *Op) noteLoaded(g *joinGroup, side int, enc string) {
	var d types.Datum
	if o.tw.spec.Kind == "window join" {
		d = opkit.DecodeRow(g.key, expr.Types(o.keys[side]))[o.tw.spec.Key]
	} else {
		d = opkit.DecodeRow(enc, o.ts[side])[o.tw.spec.Col[side]]
	}
	if !d.Null {
		o.noteExpiry(g, side, enc, d.I)
	}
}

// freeByWatermark, at a barrier, removes the rows whose every partner the
// watermark has passed and lists them as changed with no count left, so
// writeDirty deletes them from the state table. Rows of evicted groups
// are deleted there without being read back, except in joins whose rows
// count their matches (outer, semi, anti): there the group is read back,
// and the rows left that a freed row matched keep that match as pinned
// (stored with them), since load can no longer recompute it. A
// NULL-padded row (an anti join's row) was emitted when its row came
// unmatched, and is retracted by a match: freeing a row emits nothing.
func (o *Op) freeByWatermark(ectx *expr.Ctx) error {
	wm := o.tw.wm
	if o.tw.spec == nil || wm == op.NoWatermark || len(o.tw.expiry) == 0 || o.tw.minAt > wm {
		return nil
	}
	pins := o.semi || o.preserve[0] || o.preserve[1]
	kept := o.tw.expiry[:0]
	minAt := int64(0)
	var freed []joinFreed
	for _, e := range o.tw.expiry {
		if e.at > wm {
			if len(kept) == 0 || e.at < minAt {
				minAt = e.at
			}
			kept = append(kept, e)
			continue
		}
		f, err := o.freeRow(ectx, e, pins)
		if err != nil {
			return err
		}
		if f.g != nil {
			freed = append(freed, f)
		}
	}
	o.store.bytes -= int64(len(o.tw.expiry)-len(kept)) * joinExpiryBytes
	clear(o.tw.expiry[len(kept):])
	o.tw.expiry, o.tw.minAt = kept, minAt
	if len(freed) > 0 {
		return o.pinPartners(ectx, freed)
	}
	return nil
}

// joinFreed is a row freed from group g (in memory) whose partners may
// have to pin its match.
type joinFreed struct {
	g     *joinGroup
	side  int
	enc   string
	count int64
}

// countsMatches says whether side's rows count their matches: the
// preserved sides of an outer join, the left rows of a semi or anti join.
func (o *Op) countsMatches(side int) bool {
	if o.semi {
		return side == 0
	}
	return o.preserve[side]
}

// freeRow frees the row of e; with pins, it returns it if its group is
// in memory (read back if it was evicted) and the other side counts
// matches.
func (o *Op) freeRow(ectx *expr.Ctx, e joinExpiry, pins bool) (joinFreed, error) {
	g := e.g
	cur := o.store.groups[g.key]
	if cur == nil && g.evicted && pins {
		if !o.store.readable(g.key) {
			// Read back and emptied since: the state table still has the
			// rows whose deletion an epoch not yet committed writes.
			return joinFreed{}, nil
		}
		var err error
		if cur, err = o.store.reload(ectx, g.key, g.kg, g.hash, -1); err != nil || cur == nil {
			return joinFreed{}, err
		}
	}
	switch {
	case cur != nil && (cur == g || g.evicted):
		// In memory (maybe read back after eviction).
		i := cur.find(e.side, e.enc)
		if i < 0 {
			if g.evicted {
				o.store.dirty = append(o.store.dirty, joinDirty{g: g, side: e.side, enc: e.enc})
			}
			return joinFreed{}, nil // retracted meanwhile
		}
		r := &cur.rows[e.side][i]
		f := joinFreed{side: e.side, enc: e.enc, count: r.count}
		if pins && o.countsMatches(1-e.side) {
			f.g = cur
		}
		if !r.dirty {
			o.store.dirty = append(o.store.dirty, joinDirty{g: cur, side: e.side, enc: e.enc})
		}
		cur.remove(e.side, i)
		cur.clockRow = false
		o.store.bytes -= joinRowBytes + int64(len(e.enc))
		if len(cur.rows[0]) == 0 && len(cur.rows[1]) == 0 {
			o.store.dropEmpty(cur)
		}
		o.tw.freed++
		return f, nil
	case cur == nil && g.evicted:
		// In the state table only: writeDirty finds no group, deletes.
		o.store.dirty = append(o.store.dirty, joinDirty{g: g, side: e.side, enc: e.enc})
		o.tw.freed++
	}
	// Otherwise the row went with its group (retracted, or expired by
	// state.ttl); a row of the key stored since has an entry of its own.
	return joinFreed{}, nil
}

// pinPartners adds each freed row's count to the pinned matches of the
// rows left on the other side of its group that it matched (they count
// it in their matches already), and lists them as changed, so the pin is
// stored with them in the epoch that deletes the freed row.
func (o *Op) pinPartners(ectx *expr.Ctx, freed []joinFreed) error {
	slices.SortFunc(freed, func(a, b joinFreed) int {
		if a.g != b.g {
			return strings.Compare(a.g.key, b.g.key)
		}
		return a.side - b.side
	})
	var encs, qenc []string
	var pi []int
	for lo := 0; lo < len(freed); {
		hi := lo + 1
		for hi < len(freed) && freed[hi].g == freed[lo].g && freed[hi].side == freed[lo].side {
			hi++
		}
		g, side := freed[lo].g, freed[lo].side
		part := freed[lo:hi]
		lo = hi
		other := 1 - side
		if g.gone || len(g.rows[other]) == 0 {
			continue
		}
		encs, pi, qenc = encs[:0], pi[:0], qenc[:0]
		for i, f := range part {
			encs = append(encs, f.enc)
			for k := range g.rows[other] {
				pi, qenc = append(pi, i), append(qenc, g.rows[other][k].enc)
			}
		}
		rec := opkit.DecodeRecord(o.ts[side], encs)
		pass, err := o.residual(ectx, rec, side, pi, qenc)
		rec.Release()
		if err != nil {
			return err
		}
		n := len(g.rows[other])
		for x := range pi {
			if pass != nil && !pass[x] {
				continue
			}
			q := &g.rows[other][x%n]
			q.pinned += part[pi[x]].count
			if !q.dirty {
				q.dirty = true
				o.store.dirty = append(o.store.dirty, joinDirty{g: g, side: other, enc: q.enc})
			}
		}
	}
	return nil
}
