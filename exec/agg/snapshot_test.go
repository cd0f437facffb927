package agg

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/storage"
)

// TestAggSnapshotIsCanonical: the memory backend's snapshot of an
// aggregate, built from its groups alone (Snapshot), is entry for entry
// what the Pebble backend holds in the state table after the same epochs —
// groups and their values (count(DISTINCT), min/max under retraction),
// emptied groups gone — so a savepoint is one format for both backends.
func TestAggSnapshotIsCanonical(t *testing.T) {
	j := valueJob(t)
	o := restoredOp(t, j)
	var rows [][2]int64
	for k := range int64(300) {
		for v := range int64(k % 7) {
			rows = append(rows, [2]int64{k, v}, [2]int64{k, v * 3})
		}
	}
	pushSigned(t, o, rows, 1)
	saveEpoch(t, j, o, 1)
	// Groups lose values, one empties (its entries go), one gains.
	pushSigned(t, o, [][2]int64{{5, 0}, {5, 0}, {6, 3}, {8, 0}, {8, 0}, {8, 1}, {8, 3}}, -1)
	pushSigned(t, o, [][2]int64{{1000, 42}, {9, 99}}, 1)
	saveEpoch(t, j, o, 2)
	want := stateOf(t, j, o.id)
	s := o.Snapshot(2)
	got := opkittest.Entries(s)
	if len(got) != len(want) {
		t.Fatalf("snapshot has %d entries, the state table %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("entry %d: snapshot %s, state table %s", i, got[i], want[i])
		}
	}
	for i := 1; i < s.Len(); i++ {
		a, _ := s.Entry(i - 1)
		b, _ := s.Entry(i)
		if bytes.Compare(a, b) >= 0 {
			t.Fatalf("entries %d and %d out of key order", i-1, i)
		}
	}
	// The snapshot does not change with the operator afterwards.
	pushSigned(t, o, [][2]int64{{1, 0}, {2, 0}}, -1)
	o.prepareSave(3)
	if after := opkittest.Entries(s); fmt.Sprint(after) != fmt.Sprint(got) {
		t.Fatal("the snapshot changed with the operator")
	}
}

// TestMemoryBackendHoldsAggregateOnce: on the memory backend an aggregate
// that loaded its groups takes them out of the job's state map, so its
// state is held once (in its groups), and a snapshot written from the
// aggregate's own entries restores the same groups.
func TestMemoryBackendHoldsAggregateOnce(t *testing.T) {
	j := valueJob(t)
	o := restoredOp(t, j)
	var rows [][2]int64
	for k := range int64(2000) {
		rows = append(rows, [2]int64{k, k % 5}, [2]int64{k, 7})
	}
	pushSigned(t, o, rows, 1)
	saveEpoch(t, j, o, 1)
	want := groupRows(t, o)

	// The job moves to the memory backend: its state table is loaded into
	// the map, the aggregate loads its groups from there and releases them.
	j.mem = true
	if err := j.db.Memory().Use(testJobID); err != nil {
		t.Fatal(err)
	}
	if n := j.db.Memory().Bytes(testJobID); n == 0 {
		t.Fatal("the state map is empty before the aggregate loaded")
	}
	op2 := restoredOp(t, j)
	if got := groupRows(t, op2); got != want {
		t.Fatal("groups loaded on the memory backend differ")
	}
	if n := j.db.Memory().Bytes(testJobID); n != 0 {
		t.Fatalf("the state map still holds %d bytes after the aggregate loaded its groups", n)
	}
	// A snapshot from the aggregate's own entries, committed, then read
	// back by a restarted job.
	w := j.db.State().NewEpochBatch()
	w.SnapshotMemState(testJobID, false, []storage.OpSnapshot{op2.Snapshot(2)})
	if err := j.db.State().CommitEpoch([]*storage.Batch{w}, 2, nil, false); err != nil {
		t.Fatal(err)
	}
	if !j.db.Memory().HasSnapshot(testJobID) {
		t.Fatal("no snapshot committed")
	}
	if n, err := j.db.State().Entries(testJobID); err != nil || n != 2000*(1+4*2) {
		t.Fatalf("snapshot holds %d entries (%v), want %d", n, err, 2000*9)
	}
	if err := j.db.Memory().Use(testJobID); err != nil {
		t.Fatal(err)
	}
	if got := groupRows(t, restoredOp(t, j)); got != want {
		t.Fatal("groups restored from the snapshot differ")
	}
}

// TestAggSnapshotAllocatedOnce: an aggregate's snapshot allocates its
// buffers once at their size (Snapshot sizes them first): none has
// room left beyond the allocator's rounding (at most a page or 1/64 of the
// size), where growing them by append left up to a quarter of each unused
// and copied them as they grew. 50K groups with their values: 410K
// entries, 28 MB.
func TestAggSnapshotAllocatedOnce(t *testing.T) {
	j := valueJob(t)
	o := restoredOp(t, j)
	var rows [][2]int64
	for k := range int64(50_000) {
		rows = append(rows, [2]int64{k, k % 5}, [2]int64{k, k % 3})
	}
	pushSigned(t, o, rows, 1)
	saveEpoch(t, j, o, 1)
	s := o.Snapshot(1)
	const page = 8 << 10
	fp := s.Entries.Footprint()
	for _, b := range []struct {
		name          string
		len, cap, esz int
	}{
		{"buf", fp[0][0], fp[0][1], 1},
		{"spans", fp[1][0], fp[1][1], 12},
		{"keys", fp[2][0], fp[2][1], 32},
	} {
		t.Logf("%s: %d of %d bytes used", b.name, b.len*b.esz, b.cap*b.esz)
		if b.len == 0 || (b.cap-b.len)*b.esz > max(page, b.len*b.esz/64) {
			t.Errorf("snapshot %s holds %d bytes for %d: more than the allocator's rounding unused", b.name, b.cap*b.esz, b.len*b.esz)
		}
	}
}
