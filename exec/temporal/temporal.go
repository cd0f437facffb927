// Package temporal is the operator of a temporal filter (ts > now() -
// INTERVAL '1' HOUR in a continuous query's WHERE): it passes a row while
// processing time is before the row's deadline and retracts it at the
// first barrier past it. The planner side (finding the conjunct, refusing
// now() elsewhere) stays with the graph in exec/temporal.go.
//
// It implements the operator contract (exec/op) and reaches its state only
// through opkit.State; it imports neither the runtime nor another
// operator family.
package temporal

import (
	"container/heap"
	"encoding/binary"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Spec is a temporal node: Deadline computes, over the node's input rows,
// the time (µs) from which a row is out of the view once Inclusive is
// false; with Inclusive (>=) the row is still in at the deadline itself.
type Spec struct {
	Deadline  expr.Expr
	Inclusive bool
}

// Op is the one instance of a temporal node. It passes on each row whose
// deadline is still ahead and keeps it, with its multiplicity, under its
// expiry time; a retraction passes on (and removes) a row it keeps, and is
// dropped for a row it no longer keeps (already retracted, or never
// passed). At each barrier it retracts the rows whose time has come.
//
// State, per row: key group (0), expiry (8 bytes, big-endian, sign bit
// flipped, so keys sort by expiry), encoded row -> multiplicity. Every row
// it keeps is in memory; it is restored at load, and rows that expired
// while the job was down are retracted at the first barrier.
type Op struct {
	spec  Spec
	ts    []types.T
	out   op.Outlet
	st    opkit.State      // nil: a job without state
	rows  map[string]int64 // state key -> multiplicity
	order expiryHeap       // the keys of rows, by expiry (a key may be listed after it went)
	dirty map[string]struct{}
	enc   opkit.RowEncoder
	keys  []byte
	now   func() int64 // processing time, µs
	// reemit makes the next barrier pass every kept row on anew (a view
	// upgraded from a savepoint rebuilds its rows from state).
	reemit bool
}

// New returns the node's instance over input rows of types ts, emitting
// into out; st is its state (nil for a job without state).
func New(spec Spec, ts []types.T, out op.Outlet, st opkit.State) *Op {
	return &Op{spec: spec, ts: ts, out: out, st: st,
		rows: map[string]int64{}, dirty: map[string]struct{}{},
		now: func() int64 { return time.Now().UnixMicro() }}
}

// SetClock replaces processing time (tests).
func (o *Op) SetClock(now func() int64) { o.now = now }

// Kept is the number of distinct rows kept.
func (o *Op) Kept() int { return len(o.rows) }

// keyHead is the key group byte and the expiry.
const keyHead = 9

func appendKey(b []byte, exp int64, row []byte) []byte {
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(exp)^1<<63)
	return append(b, row...)
}

func expiry(key string) int64 {
	return int64(binary.BigEndian.Uint64([]byte(key[1:keyHead])) ^ 1<<63)
}

// Push implements op.Operator.
func (o *Op) Push(ectx *expr.Ctx, c op.Chunk, _ int) error {
	rec := c.Rec
	defer rec.Release()
	n := int(rec.NumRows())
	d, err := expr.Eval(ectx, o.spec.Deadline, rec)
	if err != nil {
		return err
	}
	defer d.Release()
	dl, _ := d.(*array.Int64) // nil: all NULL, and NULL is not > anything
	if dl == nil || n == 0 {
		return nil
	}
	now := o.now()
	o.enc.Encode(rec.Columns()[:len(o.ts)], o.ts, n)
	// The kept rows' keys share one buffer, made a string once.
	o.keys = o.keys[:0]
	ends := make([]int, n)
	exps := make([]int64, n)
	for i := 0; i < n; i++ {
		if !dl.IsNull(i) {
			exps[i] = dl.Value(i)
			if o.spec.Inclusive {
				exps[i]++
			}
			if exps[i] > now {
				o.keys = appendKey(o.keys, exps[i], o.enc.Row(i))
			}
		}
		ends[i] = len(o.keys)
	}
	all := string(o.keys)
	var kept []int
	var ops []types.ChangeOp
	start := 0
	for i := 0; i < n; i++ {
		if ends[i] == start {
			continue // NULL or past its deadline
		}
		key := all[start:ends[i]]
		start = ends[i]
		old := o.rows[key]
		if c.Ops != nil && c.Ops[i].Sign() < 0 {
			if old == 0 {
				continue // not passed on, or already retracted
			}
			if old == 1 {
				delete(o.rows, key)
			} else {
				o.rows[key] = old - 1
			}
		} else {
			if old == 0 {
				heap.Push(&o.order, expiryItem{exp: exps[i], key: key})
			}
			o.rows[key] = old + 1
		}
		o.dirty[key] = struct{}{}
		kept = append(kept, i)
		if c.Ops != nil {
			ops = append(ops, c.Ops[i])
		}
	}
	if len(kept) == 0 {
		return nil
	}
	if len(kept) == n {
		rec.Retain()
		return o.out.Emit(ectx, op.Chunk{Rec: rec, Ops: c.Ops})
	}
	return o.out.Emit(ectx, op.Chunk{Rec: opkit.TakeRecord(rec, kept, o.ts), Ops: ops})
}

// Barrier implements op.Operator: it retracts the rows whose expiry has
// come and commits the rows that changed in the epoch.
func (o *Op) Barrier(ectx *expr.Ctx, b *op.Barrier, w *storage.Batch) error {
	now := o.now()
	buf := opkit.NewRowsOut(o.ts)
	flush := func() error {
		if buf.N == 0 {
			return nil
		}
		return o.out.Emit(ectx, buf.Chunk())
	}
	if o.reemit {
		o.reemit = false
		for key, cnt := range o.rows {
			for ; cnt > 0; cnt-- {
				buf.AddStored(key[keyHead:], types.ChangeInsert)
			}
			if buf.N >= 4096 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	for o.order.Len() > 0 && o.order.items[0].exp <= now {
		it := heap.Pop(&o.order).(expiryItem)
		cnt := o.rows[it.key]
		if cnt == 0 {
			continue // retracted before it expired
		}
		delete(o.rows, it.key)
		o.dirty[it.key] = struct{}{}
		for ; cnt > 0; cnt-- {
			buf.AddStored(it.key[keyHead:], types.ChangeDelete)
		}
		if buf.N >= 4096 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if o.st != nil {
		if _, err := o.st.Commit(w, b, len(o.dirty) > 0, false, o.write, o.snapshot); err != nil {
			return err
		}
	}
	clear(o.dirty)
	return nil
}

// write writes the rows that changed in the epoch, in key order.
func (o *Op) write(x *opkit.Writer) error {
	if len(o.dirty) == 0 {
		return nil
	}
	keys := make([]string, 0, len(o.dirty))
	for k := range o.dirty {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var val []byte
	for _, k := range keys {
		if cnt := o.rows[k]; cnt > 0 {
			val = binary.AppendUvarint(val[:0], uint64(cnt))
			x.Put([]byte(k), val)
		} else {
			x.Delete([]byte(k))
		}
	}
	return nil
}

// snapshot encodes every row kept as write writes its entry, sorted by
// key, for a backend that snapshots.
func (o *Op) snapshot(epoch uint64) *opkit.Snapshot {
	s := opkit.NewSnapshot(0, epoch)
	var val []byte
	for k, cnt := range o.rows {
		if cnt > 0 {
			s.Entries.AddKV(0, []byte(k), binary.AppendUvarint(val[:0], uint64(cnt)))
		}
	}
	s.Entries.Sort()
	return s
}

// Load restores the rows kept (one instance: every key group); with
// reemit, the first barrier passes them all on anew.
func (o *Op) Load(reemit bool) error {
	err := o.st.Scan(func(key, val []byte) error {
		if len(key) < keyHead {
			return opkit.ErrCorruptState
		}
		cnt, _, err := opkit.ReadUvarint(val)
		if err != nil {
			return err
		}
		k := string(key)
		if o.rows[k] == 0 {
			heap.Push(&o.order, expiryItem{exp: expiry(k), key: k})
		}
		o.rows[k] = int64(cnt)
		return nil
	})
	if err != nil {
		return err
	}
	o.st.Loaded()
	o.reemit = reemit
	return nil
}

type expiryItem struct {
	exp int64
	key string
}

// expiryHeap is a min-heap of rows by expiry.
type expiryHeap struct{ items []expiryItem }

func (h *expiryHeap) Len() int           { return len(h.items) }
func (h *expiryHeap) Less(i, j int) bool { return h.items[i].exp < h.items[j].exp }
func (h *expiryHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *expiryHeap) Push(x any)         { h.items = append(h.items, x.(expiryItem)) }
func (h *expiryHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}
