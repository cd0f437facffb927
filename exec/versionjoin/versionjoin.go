// Package versionjoin is the operator of an event-time temporal join, a
// join with a versioned table (Flink's):
//
//	SELECT ... FROM orders o [LEFT] JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r
//	  ON o.currency = r.currency
//
// The build side (input 1) is a keyed table whose WATERMARK column is the
// version time: every row it inserts or updates to is a version of its
// key, valid from its time. Each probe row (input 0) joins the version of
// its key whose time is the latest at or before the probe's time (an
// inner join drops a probe row without one, a LEFT join pads it with
// NULLs).
//
// A probe row waits in state until the watermark (the minimum over both
// inputs; no row before it is still to come) passes its time; then it is joined and emitted once, final:
// versions that come later cannot change it, nothing is retracted. A
// probe row behind the watermark when it comes is late and dropped
// (counted). Retractions of the build side (an UPDATE's old row, a
// DELETE) are not versions and change nothing: a version, once read,
// stays in the history. Once the watermark passes, only the latest
// version at or before it is kept per key, so state holds per key the
// versions ahead of the watermark and one behind it, and the probe rows
// ahead of it.
//
// A batch query runs the same rule over everything (Batch): all probe
// rows against the build side's whole history, so a view equals its
// batch query once the watermark has passed every probe row.
//
// It implements the operator contract (exec/op) and reaches its state only
// through opkit.State; it imports neither the runtime nor another
// operator family. One instance runs a join (key group 0).
package versionjoin

import (
	"container/heap"
	"encoding/binary"
	"math"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// errRetract refuses a probe side that retracts rows.
var errRetract = sqlerr.New(sqlerr.FeatureNotSupported,
	"a temporal join (FOR SYSTEM_TIME AS OF a time column) in a continuous query needs a left side that only inserts rows; this one retracts rows, which a join whose results are final could not retract")

// Spec is a versioned join.
type Spec struct {
	Left bool // LEFT JOIN: a probe row without a version gets NULLs
	// ProbeTypes and BuildTypes are the two inputs' column types.
	ProbeTypes, BuildTypes []types.T
	// ProbeKeys (over probe rows) and BuildKeys (over build rows) are the
	// ON equalities' sides; BuildKeys are the table's PRIMARY KEY columns.
	ProbeKeys, BuildKeys []expr.Expr
	// ProbeTime and BuildTime are the time columns (timestamps).
	ProbeTime, BuildTime int
	// Canon, if set, makes equal key values encode alike (interval '1 day'
	// and '24 hours'); it replaces the arrays it is given.
	Canon func(*expr.Ctx, []arrow.Array, []types.T)
}

// version is one version of a key: valid from ts, the build row's encoding.
type version struct {
	ts  int64
	row string
}

// Op is the one instance of a versioned join.
type Op struct {
	spec Spec
	out  op.Outlet
	st   opkit.State // nil: a job without state
	ts   []types.T   // output: probe then build columns
	// vers holds each key's versions sorted by time; multi the keys with
	// more than one (those pruning looks at).
	vers  map[string][]version
	multi map[string]struct{}
	// probes holds the waiting probe rows by state key (probeKey) with
	// their multiplicity.
	probes map[string]int64
	due    keyHeap // the keys of probes, smallest (earliest) first
	wm     int64   // the watermark the waiting rows were last compared with
	late   int64
	// dirty holds the state keys changed in the epoch.
	dirty map[string]struct{}
	wmSet bool // wm changed in the epoch
	kenc  opkit.RowEncoder
	renc  opkit.RowEncoder
	snaps opkit.SnapReuse
}

// New returns the join's instance, emitting into out; st is its state
// (nil for a job without state).
func New(spec Spec, out op.Outlet, st opkit.State) *Op {
	return &Op{spec: spec, out: out, st: st,
		ts:   append(slices.Clip(spec.ProbeTypes), spec.BuildTypes...),
		vers: map[string][]version{}, multi: map[string]struct{}{},
		probes: map[string]int64{}, wm: op.NoWatermark, dirty: map[string]struct{}{}}
}

// State keys, all in key group 0:
//
//	0 'v' uvarint(len key) key ts   -> the build row (a version)
//	0 'p' ts uvarint(len key) key row -> multiplicity (a waiting probe row)
//	0 'w'                            -> the watermark (8 bytes)
//
// ts is 8 bytes big-endian with the sign bit flipped, so keys sort by time.
const (
	tagVersion = 'v'
	tagProbe   = 'p'
	tagWM      = 'w'
)

func appendTS(b []byte, ts int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(ts)^1<<63) }
func readTS(b []byte) int64              { return int64(binary.BigEndian.Uint64(b) ^ 1<<63) }

func versionKey(key string, ts int64) string {
	b := make([]byte, 0, 2+binary.MaxVarintLen64+len(key)+8)
	b = append(b, 0, tagVersion)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	return string(appendTS(b, ts))
}

func appendProbeKey(b []byte, ts int64, key, row []byte) []byte {
	b = append(b, 0, tagProbe)
	b = appendTS(b, ts)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	return append(b, row...)
}

// parseProbe splits a probe state key into its time, key and row.
func parseProbe(k string) (ts int64, key, row string, ok bool) {
	if len(k) < 11 {
		return 0, "", "", false
	}
	ts = readTS([]byte(k[2:10]))
	n, w := binary.Uvarint([]byte(k[10:min(len(k), 20)]))
	if w <= 0 || 10+w+int(n) > len(k) {
		return 0, "", "", false
	}
	return ts, k[10+w : 10+w+int(n)], k[10+w+int(n):], true
}

// parseVersion splits a version state key into its key and time.
func parseVersion(k string) (key string, ts int64, ok bool) {
	if len(k) < 11 {
		return "", 0, false
	}
	n, w := binary.Uvarint([]byte(k[2:min(len(k), 12)]))
	if w <= 0 || 2+w+int(n)+8 != len(k) {
		return "", 0, false
	}
	return k[2+w : 2+w+int(n)], readTS([]byte(k[2+w+int(n):])), true
}

// keysOf evaluates keys over rec and encodes them; valid[i] is false for a
// row with a NULL key (which meets no version).
func (o *Op) keysOf(ectx *expr.Ctx, keys []expr.Expr, rec arrow.RecordBatch) (valid []bool, err error) {
	n := int(rec.NumRows())
	cols := make([]arrow.Array, len(keys))
	kt := make([]types.T, len(keys))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	valid = make([]bool, n)
	for i := range valid {
		valid[i] = true
	}
	for i, k := range keys {
		a, err := expr.Eval(ectx, k, rec)
		if err != nil {
			return nil, err
		}
		cols[i], kt[i] = a, k.Type()
		for r := 0; r < n; r++ {
			if a.IsNull(r) {
				valid[r] = false
			}
		}
	}
	if o.spec.Canon != nil {
		o.spec.Canon(ectx, cols, kt)
	}
	o.kenc.EncodeKeys(cols, kt, n)
	return valid, nil
}

// times returns column c of rec as timestamps (nil: all NULL).
func times(rec arrow.RecordBatch, c int) *array.Int64 {
	a, _ := rec.Column(c).(*array.Int64)
	return a
}

// Push implements op.Operator: a probe row (in 0) waits for the
// watermark; a build row (in 1) that inserts is a version of its key.
func (o *Op) Push(ectx *expr.Ctx, c op.Chunk, in int) error {
	rec := c.Rec
	defer rec.Release()
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if in == 1 {
		return o.pushBuild(ectx, c)
	}
	valid, err := o.keysOf(ectx, o.spec.ProbeKeys, rec)
	if err != nil {
		return err
	}
	o.renc.Encode(rec.Columns()[:len(o.spec.ProbeTypes)], o.spec.ProbeTypes, n)
	tcol := times(rec, o.spec.ProbeTime)
	var buf []byte
	var now *opkit.RowsOut
	for i := 0; i < n; i++ {
		if c.Ops != nil && c.Ops[i].Sign() < 0 {
			return errRetract
		}
		if tcol == nil || tcol.IsNull(i) {
			// No time: no version is at or before it.
			if o.spec.Left {
				if now == nil {
					now = opkit.NewRowsOut(o.ts)
				}
				o.appendOut(now, string(o.renc.Row(i)), "")
			}
			continue
		}
		t := tcol.Value(i)
		if t < o.wm {
			o.late++
			continue
		}
		key := o.kenc.Row(i)
		if !valid[i] {
			key = nil // meets nothing; still waits, to be emitted in time order
		}
		buf = appendProbeKey(buf[:0], t, key, o.renc.Row(i))
		k := string(buf)
		if o.probes[k] == 0 {
			heap.Push(&o.due, k)
		}
		o.probes[k]++
		o.dirty[k] = struct{}{}
	}
	if now != nil && now.N > 0 {
		return o.out.Emit(ectx, now.Chunk())
	}
	return nil
}

// pushBuild adds the versions of a build chunk.
func (o *Op) pushBuild(ectx *expr.Ctx, c op.Chunk) error {
	rec := c.Rec
	n := int(rec.NumRows())
	valid, err := o.keysOf(ectx, o.spec.BuildKeys, rec)
	if err != nil {
		return err
	}
	o.renc.Encode(rec.Columns()[:len(o.spec.BuildTypes)], o.spec.BuildTypes, n)
	tcol := times(rec, o.spec.BuildTime)
	for i := 0; i < n; i++ {
		if c.Ops != nil && c.Ops[i].Sign() < 0 || !valid[i] || tcol == nil || tcol.IsNull(i) {
			continue
		}
		o.addVersion(o.kenc.RowString(i), version{ts: tcol.Value(i), row: o.renc.RowString(i)})
	}
	return nil
}

// addVersion puts v among key's versions; one at the same time is
// replaced (the later write wins).
func (o *Op) addVersion(key string, v version) {
	vs := o.vers[key]
	i := sort.Search(len(vs), func(j int) bool { return vs[j].ts >= v.ts })
	if i < len(vs) && vs[i].ts == v.ts {
		vs[i] = v
	} else {
		vs = slices.Insert(vs, i, v)
	}
	o.vers[key] = vs
	if len(vs) > 1 {
		o.multi[key] = struct{}{}
	}
	if o.st != nil {
		o.dirty[versionKey(key, v.ts)] = struct{}{}
	}
}

// find returns the build row of key's latest version at or before ts.
func (o *Op) find(key string, ts int64) (string, bool) {
	vs := o.vers[key]
	i := sort.Search(len(vs), func(j int) bool { return vs[j].ts > ts })
	if i == 0 {
		return "", false
	}
	return vs[i-1].row, true
}

// appendOut appends a probe row joined with build (NULLs if "").
func (o *Op) appendOut(r *opkit.RowsOut, probe, build string) {
	r.AppendSide(0, o.spec.ProbeTypes, nil, -1, probe)
	r.AppendSide(len(o.spec.ProbeTypes), o.spec.BuildTypes, nil, -1, build)
	r.AddOp(types.ChangeInsert)
}

// AdvanceWatermark implements op.WatermarkHandler: the waiting probe rows
// the watermark reached are joined and emitted, then versions it passed
// are dropped but the latest per key.
func (o *Op) AdvanceWatermark(ectx *expr.Ctx, wm op.Watermark) (int64, error) {
	late := o.late
	o.late = 0
	if wm.At <= o.wm || wm.At == op.NoWatermark {
		return late, nil
	}
	o.wm, o.wmSet = wm.At, true
	// No row before the watermark is still to come; one at it may be.
	return late, o.emitUpTo(ectx, wm.At-1, true)
}

// emitUpTo joins and emits the waiting probe rows at or before upTo, in
// time order; with prune it then drops the versions upTo passed.
func (o *Op) emitUpTo(ectx *expr.Ctx, upTo int64, prune bool) error {
	out := opkit.NewRowsOut(o.ts)
	for o.due.Len() > 0 {
		if ts, _, _, _ := parseProbe(o.due[0]); ts > upTo {
			break
		}
		k := heap.Pop(&o.due).(string)
		ts, key, row, ok := parseProbe(k)
		if !ok {
			return opkit.ErrCorruptState
		}
		build, found := "", false
		if key != "" {
			build, found = o.find(key, ts)
		}
		if found || o.spec.Left {
			for cnt := o.probes[k]; cnt > 0; cnt-- {
				o.appendOut(out, row, build)
			}
		}
		delete(o.probes, k)
		o.dirty[k] = struct{}{}
		if out.N >= 4096 {
			if err := o.out.Emit(ectx, out.Chunk()); err != nil {
				return err
			}
		}
	}
	if out.N > 0 {
		if err := o.out.Emit(ectx, out.Chunk()); err != nil {
			return err
		}
	} else {
		out.Release()
	}
	if prune {
		o.prune(upTo)
	}
	return nil
}

// prune drops, per key, the versions before the latest at or before wm:
// no probe row still to come (all are after wm) can choose them.
func (o *Op) prune(wm int64) {
	for key := range o.multi {
		vs := o.vers[key]
		i := sort.Search(len(vs), func(j int) bool { return vs[j].ts > wm })
		if i <= 1 {
			continue
		}
		if o.st != nil {
			for _, v := range vs[:i-1] {
				o.dirty[versionKey(key, v.ts)] = struct{}{}
			}
		}
		vs = slices.Delete(vs, 0, i-1)
		o.vers[key] = vs
		if len(vs) < 2 {
			delete(o.multi, key)
		}
	}
}

// Barrier implements op.Operator: it commits the epoch's changes.
func (o *Op) Barrier(_ *expr.Ctx, b *op.Barrier, w *storage.Batch) error {
	if o.st != nil {
		changed := len(o.dirty) > 0 || o.wmSet
		o.snaps.Note(changed)
		if _, err := o.st.Commit(w, b, changed, false, o.write, o.snapshot); err != nil {
			return err
		}
	}
	clear(o.dirty)
	o.wmSet = false
	return nil
}

// value is the state value of state key k, nil if it has none.
func (o *Op) value(k string) []byte {
	switch k[1] {
	case tagProbe:
		if cnt := o.probes[k]; cnt > 0 {
			return binary.AppendUvarint(nil, uint64(cnt))
		}
	case tagVersion:
		key, ts, ok := parseVersion(k)
		if !ok {
			return nil
		}
		vs := o.vers[key]
		i := sort.Search(len(vs), func(j int) bool { return vs[j].ts >= ts })
		if i < len(vs) && vs[i].ts == ts {
			return []byte(vs[i].row)
		}
	}
	return nil
}

func wmKey() []byte { return []byte{0, tagWM} }

func (o *Op) wmValue() []byte { return binary.BigEndian.AppendUint64(nil, uint64(o.wm)) }

// write writes the entries that changed in the epoch, in key order.
func (o *Op) write(x *opkit.Writer) error {
	keys := make([]string, 0, len(o.dirty)+1)
	for k := range o.dirty {
		keys = append(keys, k)
	}
	if o.wmSet {
		keys = append(keys, string(wmKey()))
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k[1] == tagWM {
			x.Put(wmKey(), o.wmValue())
		} else if v := o.value(k); v != nil {
			x.Put([]byte(k), v)
		} else {
			x.Delete([]byte(k))
		}
	}
	return nil
}

// snapshot encodes every entry as write writes it, sorted by key.
func (o *Op) snapshot(epoch uint64) *opkit.Snapshot {
	return o.snaps.Take(0, epoch, false, func(epoch uint64) *opkit.Snapshot {
		s := opkit.NewSnapshot(0, epoch)
		for k, cnt := range o.probes {
			if cnt > 0 {
				s.Entries.AddKV(0, []byte(k), binary.AppendUvarint(nil, uint64(cnt)))
			}
		}
		for key, vs := range o.vers {
			for _, v := range vs {
				s.Entries.AddKV(0, []byte(versionKey(key, v.ts)), []byte(v.row))
			}
		}
		if o.wm != op.NoWatermark {
			s.Entries.AddKV(0, wmKey(), o.wmValue())
		}
		s.Entries.Sort()
		return s
	})
}

// Load restores the instance's state (one instance: every key group).
func (o *Op) Load() error {
	err := o.st.Scan(func(key, val []byte) error {
		if len(key) < 2 {
			return opkit.ErrCorruptState
		}
		k := string(key)
		switch key[1] {
		case tagWM:
			if len(val) != 8 {
				return opkit.ErrCorruptState
			}
			o.wm = int64(binary.BigEndian.Uint64(val))
		case tagProbe:
			cnt, _, err := opkit.ReadUvarint(val)
			if err != nil {
				return err
			}
			o.probes[k] = int64(cnt)
			o.due = append(o.due, k) // keys come in order: a heap already
		case tagVersion:
			vk, ts, ok := parseVersion(k)
			if !ok {
				return opkit.ErrCorruptState
			}
			// Keys come in order: by key, then time.
			vs := append(o.vers[vk], version{ts: ts, row: string(val)})
			o.vers[vk] = vs
			if len(vs) > 1 {
				o.multi[vk] = struct{}{}
			}
		default:
			return opkit.ErrCorruptState
		}
		return nil
	})
	if err != nil {
		return err
	}
	o.st.Loaded()
	return nil
}

// Waiting is the number of distinct probe rows waiting; Versions the
// versions kept (tests).
func (o *Op) Waiting() int { return len(o.probes) }
func (o *Op) Versions() int {
	n := 0
	for _, vs := range o.vers {
		n += len(vs)
	}
	return n
}

// Batch runs the join over all the rows (a batch query): every build row
// first, the whole history, then every probe row; it emits into out.
func Batch(ectx *expr.Ctx, spec Spec, build, probe []arrow.RecordBatch, out op.Outlet) error {
	o := New(spec, out, nil)
	var err error
	for _, rec := range build {
		if err == nil {
			err = o.Push(ectx, op.Chunk{Rec: rec}, 1)
		} else {
			rec.Release()
		}
	}
	for _, rec := range probe {
		if err == nil {
			err = o.Push(ectx, op.Chunk{Rec: rec}, 0)
		} else {
			rec.Release()
		}
	}
	if err != nil {
		return err
	}
	return o.emitUpTo(ectx, math.MaxInt64, false)
}

// keyHeap is a min-heap of probe state keys: they sort by time.
type keyHeap []string

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
