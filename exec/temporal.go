package exec

import (
	"container/heap"
	"encoding/binary"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// A temporal filter is a continuous query's WHERE conjunct that compares a
// row's time with now(): ts > now() - INTERVAL '1' HOUR (also >=, and the
// mirrored now() - INTERVAL '1' HOUR < ts). A row passes while processing
// time is before its deadline (ts + 1 hour) and leaves the view once it is
// not: a temporal node keeps the rows it passed ordered by deadline and
// retracts them at the first barrier past it. Only lower bounds on the
// row's time are temporal filters: an upper bound (ts < now()) would make
// rows enter the view as time passes, which nothing would trigger, so it is
// refused, as is now() anywhere else in a continuous query (its value
// would be the job's start time, frozen).

// temporalSpec is a temporal node: Filter is the WHERE it came from (its
// other conjuncts run as a stage below the node), Deadline computes, over
// the node's input rows, the time (µs) from which a row is out of the view
// once Inclusive is false; with Inclusive (>=) the row is still in at the
// deadline itself.
type temporalSpec struct {
	Filter    *Filter
	Deadline  expr.Expr
	Inclusive bool
	Bound     string // the conjunct, for plans and fingerprints
}

// hasNow says e calls now().
func hasNow(e expr.Expr) bool {
	switch x := e.(type) {
	case *expr.Func:
		if x.Name == "now" {
			return true
		}
		for _, a := range x.Args {
			if hasNow(a) {
				return true
			}
		}
	case *expr.Cast:
		return hasNow(x.E)
	case *expr.Case:
		for _, w := range x.Whens {
			if hasNow(w.Cond) || hasNow(w.Then) {
				return true
			}
		}
		return x.Else != nil && hasNow(x.Else)
	case *expr.InList:
		if hasNow(x.E) {
			return true
		}
		for _, a := range x.List {
			if hasNow(a) {
				return true
			}
		}
	}
	return false
}

// errNowInView is the refusal of now() outside a temporal filter.
func errNowInView() error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "now() in a materialized view or change stream is only supported in a temporal filter, a WHERE conjunct of the form ts > now() - INTERVAL '1' HOUR (or >=): rows leave the view as time passes")
}

// refuseNow refuses now() in expressions a continuous query would
// evaluate once, at the job's start.
func refuseNow(es ...expr.Expr) error {
	for _, e := range es {
		if e != nil && hasNow(e) {
			return errNowInView()
		}
	}
	return nil
}

// splitTemporal finds the temporal conjunct of pred (which calls now()) and
// returns it as a spec and the other conjuncts (nil when there are none).
func splitTemporal(f *Filter) (*temporalSpec, expr.Expr, error) {
	var spec *temporalSpec
	var rest expr.Expr
	for _, cj := range conjuncts(f.Pred) {
		if !hasNow(cj) {
			if rest == nil {
				rest = cj
			} else {
				rest = &expr.Func{Name: "and", Args: []expr.Expr{rest, cj}, T: types.TBool}
			}
			continue
		}
		s, err := temporalConjunct(cj)
		if err != nil {
			return nil, nil, err
		}
		if spec != nil {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, "a continuous query supports one temporal filter (a comparison with now()) per WHERE; combine them into one")
		}
		s.Filter = f
		spec = s
	}
	return spec, rest, nil
}

// temporalConjunct reads e OP now() [± interval] with OP > or >= (or the
// mirrored form) into a deadline over e.
func temporalConjunct(cj expr.Expr) (*temporalSpec, error) {
	f, ok := cj.(*expr.Func)
	if !ok || len(f.Args) != 2 {
		return nil, errNowInView()
	}
	a, b, op := f.Args[0], f.Args[1], f.Name
	if hasNow(a) { // now() ... < ts: mirror it
		a, b = b, a
		op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}[op]
	}
	if hasNow(a) || a.Type().Kind != types.Timestamp {
		return nil, errNowInView()
	}
	switch op {
	case ">", ">=":
	case "<", "<=":
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a temporal filter must bound the row's time from below (ts > now() - INTERVAL '1' HOUR): with an upper bound (ts < now()) rows would enter the view as time passes")
	default:
		return nil, errNowInView()
	}
	// b is now(), now() - c or now() + c with c a constant interval.
	deadline := a
	switch x := b.(type) {
	case *expr.Func:
		if x.Name == "now" {
			break
		}
		if (x.Name != "-" && x.Name != "+") || len(x.Args) != 2 {
			return nil, errNowInView()
		}
		n, ok := x.Args[0].(*expr.Func)
		c := x.Args[1]
		if !ok || n.Name != "now" || hasNow(c) || !expr.IsConst(c) || c.Type().Kind != types.Interval {
			return nil, errNowInView()
		}
		d, err := expr.EvalConst(&expr.Ctx{Mem: memoryPool}, c)
		if err != nil {
			return nil, err
		}
		if d.Null {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the interval of a temporal filter must not be NULL")
		}
		// ts > now() - c  <=>  now() < ts + c; ts > now() + c  <=>  now() < ts - c.
		name := "+"
		if x.Name == "+" {
			name = "-"
		}
		deadline = &expr.Func{Name: name, Args: []expr.Expr{a, &expr.Const{D: d, T: c.Type()}}, T: types.TTimestamp}
	default:
		return nil, errNowInView()
	}
	return &temporalSpec{Deadline: deadline, Inclusive: op == ">=", Bound: cj.String()}, nil
}

// temporalOp is the one instance of a temporal node. It passes on each row
// whose deadline is still ahead and keeps it, with its multiplicity, under
// its expiry time; a retraction passes on (and removes) a row it keeps, and
// is dropped for a row it no longer keeps (already retracted, or never
// passed). At each barrier it retracts the rows whose time has come.
//
// State, per row: key group (0), expiry (8 bytes, big-endian, sign bit
// flipped, so keys sort by expiry), encoded row -> multiplicity. Every row
// it keeps is in memory; it is restored at load, and rows that expired
// while the job was down are retracted at the first barrier.
type temporalOp struct {
	// snap is the last snapshot, kept while nothing changes (memory backend).
	snap  snapReuse
	j     *Job
	op    uint32
	spec  *temporalSpec
	ts    []types.T
	out   *outlet
	rows  map[string]int64 // state key -> multiplicity
	order expiryHeap       // the keys of rows, by expiry (a key may be listed after it went)
	dirty map[string]struct{}
	enc   rowEncoder
	keys  []byte
	now   func() int64 // processing time, µs
	// reemit makes the next barrier pass every kept row on anew (a view
	// upgraded from a savepoint rebuilds its rows from state).
	reemit bool
}

func newTemporalOp(j *Job, n *gnode) *temporalOp {
	return &temporalOp{j: j, op: n.op, spec: n.temporal, ts: n.ins[0].from.outTypes(n.ins[0]),
		rows: map[string]int64{}, dirty: map[string]struct{}{},
		now: func() int64 { return time.Now().UnixMicro() }}
}

// temporalKeyHead is the key group byte and the expiry.
const temporalKeyHead = 9

func appendTemporalKey(b []byte, exp int64, row []byte) []byte {
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(exp)^1<<63)
	return append(b, row...)
}

func temporalExpiry(key string) int64 {
	return int64(binary.BigEndian.Uint64([]byte(key[1:temporalKeyHead])) ^ 1<<63)
}

func (o *temporalOp) Push(ectx *expr.Ctx, c Chunk, _ int) error {
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
				o.keys = appendTemporalKey(o.keys, exps[i], o.enc.Row(i))
			}
		}
		ends[i] = len(o.keys)
	}
	all := string(o.keys)
	var kept []int
	var ops []Op
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
		return o.out.emit(ectx, Chunk{Rec: rec, Ops: c.Ops}, nil)
	}
	return o.out.emit(ectx, Chunk{Rec: takeRecord(rec, kept, o.ts), Ops: ops}, nil)
}

// barrier retracts the rows whose expiry has come and writes the rows
// that changed in the epoch.
func (o *temporalOp) Barrier(ectx *expr.Ctx, b *Barrier, w *storage.Batch) error {
	now := o.now()
	buf := newRowsOut(o.ts)
	flush := func() error {
		if buf.N == 0 {
			return nil
		}
		return o.out.emit(ectx, buf.Chunk(), nil)
	}
	if o.reemit {
		o.reemit = false
		for key, cnt := range o.rows {
			for ; cnt > 0; cnt-- {
				buf.AddStored(key[temporalKeyHead:], OpInsert)
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
			buf.AddStored(it.key[temporalKeyHead:], OpDelete)
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
	if w != nil && o.j.memBackend() {
		// The rows are the state (statebackend.go): a checkpoint gets
		// their snapshot; nothing is written per epoch.
		o.snap.Note(len(o.dirty) > 0)
		if b.Snapshots() {
			w.AddOpSnapshot(o.snap.Take(o.op, b.Epoch, false, o.snapshot))
		}
	} else if w != nil && len(o.dirty) > 0 {
		keys := make([]string, 0, len(o.dirty))
		for k := range o.dirty {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		r := w.NewRun()
		var val []byte
		for _, k := range keys {
			if cnt := o.rows[k]; cnt > 0 {
				val = binary.AppendUvarint(val[:0], uint64(cnt))
				r.PutState(o.j.spec.ID, o.op, []byte(k), val)
			} else {
				r.DeleteState(o.j.spec.ID, o.op, []byte(k))
			}
		}
		w.AddRun(r)
	}
	clear(o.dirty)
	return nil
}

// snapshot encodes every row kept as the barrier writes its entry, sorted
// by key (memory backend: storage.OpSnapshot).
func (o *temporalOp) snapshot(epoch uint64) *stateSnapshot {
	s := opkit.NewSnapshot(o.op, epoch)
	var val []byte
	for k, cnt := range o.rows {
		if cnt > 0 {
			s.Entries.AddKV(0, []byte(k), binary.AppendUvarint(val[:0], uint64(cnt)))
		}
	}
	s.Entries.Sort()
	return s
}

// load restores the rows kept (one instance: every key group).
func (o *temporalOp) load() error {
	if err := o.loadRows(); err != nil {
		return err
	}
	if o.j.memBackend() {
		// The rows are the state now: the map lets go of them.
		o.j.db.ReleaseMemState(o.j.spec.ID, o.op, func(int) bool { return true })
	}
	return nil
}

func (o *temporalOp) loadRows() error {
	return o.j.db.ScanState(o.j.spec.ID, o.op, func(key, val []byte) error {
		if len(key) < temporalKeyHead {
			return errCorruptState
		}
		cnt, _, err := readUvarint(val)
		if err != nil {
			return err
		}
		k := string(key)
		if o.rows[k] == 0 {
			heap.Push(&o.order, expiryItem{exp: temporalExpiry(k), key: k})
		}
		o.rows[k] = int64(cnt)
		return nil
	})
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

// temporalOp makes a temporal node's instance (the runtime's hook): out
// takes its rows; a durable job's restores its rows.
func (j *Job) temporalOp(n *gnode, out *outlet, reemit bool) (*temporalOp, error) {
	op := newTemporalOp(j, n)
	op.out = out
	if j.durable() {
		if err := op.load(); err != nil {
			return nil, err
		}
		op.reemit = reemit
	}
	return op, nil
}
