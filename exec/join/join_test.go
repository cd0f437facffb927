package join

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// TestJoinEvictsColdGroupsFirst: a join over its share evicts the groups
// no row used for longest, and keeps those used in the last epochs (the hot
// keys), whatever the map's order (exec/rank does the same with its partitions).
func TestJoinEvictsColdGroupsFirst(t *testing.T) {
	o := &Op{store: store{groups: map[string]*joinGroup{}, evictedN: new(atomic.Int64), lazy: true}}
	const n = 1000
	for i := range n {
		k := fmt.Sprintf("k%04d", i)
		g := &joinGroup{key: k, used: uint64(i % 10), hash: uint64(i)}
		g.need[0] = g.used
		g.insert(0, joinRow{enc: "row" + k, count: 1})
		o.store.groups[k] = g
		o.store.bytes += o.store.groupBytes(g)
	}
	o.store.tick = 10
	o.store.budget = o.store.bytes / 2 // evicts to 40 %: the groups used at ticks 0–5
	o.store.evict(^uint64(0))
	if o.store.bytes > o.store.budget*8/10 {
		t.Fatalf("%d bytes left against a target of %d", o.store.bytes, o.store.budget*8/10)
	}
	for k, g := range o.store.groups {
		if g.used < 6 {
			t.Errorf("group %s used at tick %d kept while older ones went", k, g.used)
		}
	}
	if len(o.store.groups) < 3*n/10 {
		t.Errorf("%d groups left: hot groups evicted", len(o.store.groups))
	}
	for _, g := range o.store.groups {
		if g.rows[0][0].enc != "row"+g.key {
			t.Fatalf("row of %s is %q after the first spill", g.key, g.rows[0][0].enc)
		}
	}
}

// TestLookupJoinOp drives a LEFT lookup join: right changes emit nothing,
// left rows wait for the barrier and meet the right side as it is then,
// and nothing emitted is retracted when the right side changes later.
func TestLookupJoinOp(t *testing.T) {
	db := memDB(t)
	var ch chunkOutlet
	spec := kvJoinSpec(Left)
	spec.Lookup = true
	jo := New(spec, Node{Node: opkittest.Node(&ch, writeState{})})
	ectx := &expr.Ctx{Mem: opkit.Mem}
	out := func() []string {
		var rows []string
		for _, m := range ch {
			rec := m.Rec
			for i := 0; i < int(rec.NumRows()); i++ {
				if m.Ops != nil && m.Ops[i] != types.ChangeInsert {
					t.Errorf("a lookup join emitted op %v", m.Ops[i])
				}
				var s string
				for c := 0; c < int(rec.NumCols()); c++ {
					col := rec.Column(c).(*array.Int64)
					if col.IsNull(i) {
						s += " NULL"
					} else {
						s += fmt.Sprintf(" %d", col.Value(i))
					}
				}
				rows = append(rows, s[1:])
			}
			rec.Release()
		}
		ch = ch[:0]
		slices.Sort(rows)
		return rows
	}
	push := func(side int, c op.Chunk) {
		t.Helper()
		if err := jo.Push(ectx, c, side); err != nil {
			t.Fatal(err)
		}
	}
	barrier := func(e uint64) {
		t.Helper()
		if err := jo.Barrier(ectx, &op.Barrier{Epoch: e}, db.State().NewEpochBatch()); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, want ...string) {
		t.Helper()
		if got := out(); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", step, got, want)
		}
	}

	push(1, op.Chunk{Rec: opkittest.KVRecord([][2]int64{{1, 10}, {2, 20}})})
	check("right rows")
	push(0, op.Chunk{Rec: opkittest.KVRecord([][2]int64{{1, 100}, {3, 300}})})
	check("left rows before the barrier")
	push(1, signedChunk([][2]int64{{1, 10}}, types.ChangeDelete))
	push(1, signedChunk([][2]int64{{1, 11}}, types.ChangeInsert))
	check("a right update")
	barrier(1)
	check("barrier 1", "1 100 1 11", "3 300 NULL NULL")
	push(1, signedChunk([][2]int64{{2, 20}}, types.ChangeDelete))
	push(1, op.Chunk{Rec: opkittest.KVRecord([][2]int64{{3, 30}})})
	push(0, op.Chunk{Rec: opkittest.KVRecord([][2]int64{{2, 200}, {3, 301}, {1, 101}})})
	barrier(2)
	check("barrier 2", "1 101 1 11", "2 200 NULL NULL", "3 301 3 30")
	if n := len(jo.store.groups); n != 2 {
		t.Errorf("the join holds %d groups, want the right side's 2", n)
	}
	for _, g := range jo.store.groups {
		if len(g.rows[0]) != 0 {
			t.Errorf("the join kept %d left rows of a group", len(g.rows[0]))
		}
	}
}

// memDB is a storage.DB in memory, closed when t ends.
func memDB(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open("db", storage.Options{FS: storage.MemFS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// kvJoinSpec joins two sides of (k, v) int64 rows on k.
func kvJoinSpec(kind Kind) *Spec {
	k := &expr.ColRef{Idx: 0, T: types.TInt64, Name: "k"}
	ts := []types.T{types.TInt64, types.TInt64}
	return &Spec{LeftTs: ts, RightTs: ts, OutTs: append(append([]types.T(nil), ts...), ts...), Kind: kind,
		LeftKeys: []expr.Expr{k}, RightKeys: []expr.Expr{k}}
}

// chunkOutlet keeps what an operator emits.
type chunkOutlet []op.Chunk

func (o *chunkOutlet) Emit(_ *expr.Ctx, c op.Chunk) error {
	*o = append(*o, c)
	return nil
}

// writeState is an empty state table that writes an epoch's changes
// into its batch (as a job on the Pebble backend does).
type writeState struct{}

func (writeState) Get([]byte) ([]byte, error)                           { return nil, nil }
func (writeState) Scan(func(key, val []byte) error) error               { return nil }
func (writeState) ScanPrefix([]byte, func(key, val []byte) error) error { return nil }
func (writeState) Loaded()                                              {}
func (writeState) Commit(w *storage.Batch, _ *op.Barrier, _, _ bool, write func(*opkit.Writer) error, _ func(uint64) *opkit.Snapshot) (bool, error) {
	if w == nil {
		return false, nil
	}
	x := opkit.NewWriter(w, 1, 1)
	err := write(x)
	x.Close()
	return true, err
}

func signedChunk(rows [][2]int64, o types.ChangeOp) op.Chunk {
	ops := make([]types.ChangeOp, len(rows))
	for i := range ops {
		ops[i] = o
	}
	return op.Chunk{Rec: opkittest.KVRecord(rows), Ops: ops}
}

// TestJoinValue checks a join row's state value: the count alone (as
// earlier versions wrote it), with pinned matches, with an idle clock.
func TestJoinValue(t *testing.T) {
	for _, c := range [][3]int64{{1, 0, 0}, {3, 2, 0}, {1, 0, 1764000000000000}, {7, 300, 1764000000000001}} {
		v := appendJoinValue(nil, c[0], c[1], c[2])
		count, pinned, clock, err := decodeJoinValue(v)
		if err != nil || [3]int64{count, pinned, clock} != c {
			t.Errorf("%v: decoded %d, %d, %d, %v", c, count, pinned, clock, err)
		}
		if c[1] == 0 && c[2] == 0 && len(v) != 1 {
			t.Errorf("%v: %x, want the count alone", c, v)
		}
	}
	if _, _, _, err := decodeJoinValue([]byte{1, 't', 0}); err == nil {
		t.Errorf("a cut clock decoded")
	}
	if _, _, _, err := decodeJoinValue([]byte{1, 'x'}); err == nil {
		t.Errorf("an unknown field decoded")
	}
}

// TestInnerJoinEvictsSidesBySize: an inner join over its share evicts a
// side of a group, not the group, and of sides as long unused the larger
// first: an auction waiting for its bids (one row) stays while the bids
// of auctions already matched (many rows, never matched against again) go,
// and a bid of the auction then finds it in memory, no read back.
func TestInnerJoinEvictsSidesBySize(t *testing.T) {
	o := &Op{store: store{groups: map[string]*joinGroup{}, evictedN: new(atomic.Int64), lazy: true}}
	const n = 200
	for i := range n {
		k := fmt.Sprintf("k%04d", i)
		g := &joinGroup{key: k, hash: uint64(i), used: 5}
		g.insert(0, joinRow{enc: "auction" + k, count: 1})
		g.need[0] = 4 // an auction: matched against at tick 4, or waiting since then
		if i%2 == 0 { // an auction whose bids came: 20 rows, never matched against
			for b := range 20 {
				g.insert(1, joinRow{enc: fmt.Sprintf("bid%s-%02d", k, b), count: 1})
			}
			g.need[1] = 5
		}
		o.store.groups[k] = g
		o.store.bytes += o.store.groupBytes(g)
	}
	o.store.tick = 10
	o.store.budget = o.store.bytes / 2
	o.store.evict(^uint64(0))
	if o.store.bytes > o.store.budget*8/10 {
		t.Fatalf("%d bytes left against a target of %d", o.store.bytes, o.store.budget*8/10)
	}
	if len(o.store.groups) != n {
		t.Fatalf("%d groups of %d left: whole groups evicted", len(o.store.groups), n)
	}
	for k, g := range o.store.groups {
		if len(g.rows[0]) != 1 || g.partial[0] {
			t.Errorf("group %s: the auction side (one row) was evicted", k)
		}
		if len(g.rows[1]) > 0 && !g.partial[1] && len(g.rows[1]) != 20 {
			t.Errorf("group %s: %d bid rows, not partial", k, len(g.rows[1]))
		}
		if g.partial[1] && (!o.store.evicted[1].MayContain(g.hash) || !o.store.rowsOut[1].MayContain(rowHash(k, fmt.Sprintf("bid%s-00", k)))) {
			t.Errorf("group %s: evicted bids not in the filters", k)
		}
	}
}
