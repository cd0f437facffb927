package agg

import (
	"testing"

	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
)

// TestAggSnapshotReuse: over random epochs of inserts and retractions
// (count(DISTINCT), min/max under retraction), some changing nothing, the
// snapshot an aggregate hands over at a checkpoint (the last one's entries
// when nothing changed since, opkit.SnapReuse) equals a full encode of its groups
// at every checkpoint, and checkpoints with nothing new do reuse it.
func TestAggSnapshotReuse(t *testing.T) {
	j := valueJob(t)
	o := restoredOp(t, j)
	c := opkittest.NewChurn(7)
	var last *opkit.Snapshot
	var snap opkit.SnapReuse // as the memory backend's State keeps it (exec/opstate.go)
	reused := 0
	for e := uint64(1); e <= 200; e++ {
		ins, del := c.Epoch()
		if len(ins) > 0 {
			pushSigned(t, o, ins, 1)
		}
		if len(del) > 0 {
			pushSigned(t, o, del, -1)
		}
		// As the aggregate's barrier on the memory backend (Barrier; exec/opstate.go).
		o.prepareSave(e)
		snap.Note(len(o.dirty) > 0)
		if e%3 != 0 { // a checkpoint every third epoch: changes accumulate
			s := snap.Take(o.id, e, o.ttl.on, func(e uint64) *opkit.Snapshot { return o.Snapshot(e) })
			opkittest.CheckSnap(t, e, s, o.Snapshot(e))
			if last != nil && opkittest.SameBuf(s, last) {
				reused++
			}
			last = s
		}
		if err := o.changesOf(true, func(c op.Chunk) error { c.Rec.Release(); return nil }); err != nil {
			t.Fatal(err)
		}
		clearValueChanges(o.accs)
	}
	if reused == 0 {
		t.Fatal("no checkpoint reused the last snapshot")
	}
	t.Logf("%d of 133 checkpoints reused the last snapshot", reused)
}

// BenchmarkSnapshotAgg: a full encode of an aggregate's 100K groups (two
// values each for its count(DISTINCT) and min/max), against handing over
// the last snapshot when nothing changed (docs/BENCHMARKS.md).
//
//	go test ./exec -run '^$' -bench BenchmarkSnapshotAgg -benchtime 20x
func BenchmarkSnapshotAgg(b *testing.B) {
	j := valueJob(b)
	o := restoredOp(b, j)
	var rows [][2]int64
	for k := range int64(100_000) {
		rows = append(rows, [2]int64{k, 1}, [2]int64{k, 2})
	}
	pushSigned(b, o, rows, 1)
	o.prepareSave(1)
	var snap opkit.SnapReuse
	snap.Note(true)
	encode := func(e uint64) *opkit.Snapshot { return o.Snapshot(e) }
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			o.Snapshot(2)
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		snap.Take(o.id, 2, o.ttl.on, encode)
		for b.Loop() {
			snap.Note(false)
			snap.Take(o.id, 3, o.ttl.on, encode)
		}
	})
}
