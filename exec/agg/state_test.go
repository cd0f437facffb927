package agg

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// TestValueStateWrites: count(DISTINCT) and min/max under retraction write
// one state entry per changed (group, value) pair, whatever the number of
// groups and values; the state reads back, in full at startup and group by
// group after eviction.
func TestValueStateWrites(t *testing.T) {
	j := valueJob(t)
	o := restoredOp(t, j)
	var rows [][2]int64
	for k := range int64(1000) {
		for v := range int64(10) {
			rows = append(rows, [2]int64{k, v}, [2]int64{k, v})
		}
	}
	pushSigned(t, o, rows, 1)
	if n := saveEpoch(t, j, o, 1); n != 1000*(1+4*10) {
		t.Fatalf("first epoch wrote %d entries, want %d (1000 groups, 10 values for each of 4 accumulators)", n, 1000*41)
	}
	// Group 5 loses one copy of 0 (counts change, results do not); group 7
	// loses both (its min and a distinct value go); group 9 gains 100.
	pushSigned(t, o, [][2]int64{{5, 0}, {7, 0}, {7, 0}}, -1)
	pushSigned(t, o, [][2]int64{{9, 100}}, 1)
	// Per group: its entry, then value 0 (or 100) in each of the four
	// accumulators that keep values (the two DISTINCT ones, min and max):
	// 3 groups x (1 + 4).
	if n := saveEpoch(t, j, o, 2); n != 3*(1+4) {
		t.Fatalf("second epoch wrote %d entries, want %d", n, 3*5)
	}
	want := groupRows(t, o)
	if !strings.Contains(want, "7 18 9 1 9 45") || !strings.Contains(want, "9 21 11 0 100 145") {
		t.Fatalf("rows before restart:\n%s", want[:min(len(want), 400)])
	}

	op2 := restoredOp(t, j)
	if got := groupRows(t, op2); got != want {
		t.Fatalf("restored rows differ")
	}
	// Evict every group, then retract 1 twice from group 7 (its new min)
	// and one copy of 9 from group 9: the groups are read back with their
	// values, and agree with the operator that kept them in memory.
	if n := op2.evict(1, 2, 3); n != 1000 {
		t.Fatalf("evicted %d groups, want 1000", n)
	}
	// The evicted-groups filter rebuilt from the state table holds every
	// group there, and only the groups (not their value entries).
	if err := op2.evicted.Rebuild(op2.evicted.Refill); err != nil {
		t.Fatal(err)
	}
	if op2.evicted.Added() != 1000 {
		t.Fatalf("rebuilt filter has %d members, want 1000", op2.evicted.Added())
	}
	for k := range int64(1000) {
		if !op2.evicted.MayContain(accum.HashDatums([]types.Datum{types.Int(k)}, op2.keyTs)) {
			t.Fatalf("rebuilt filter misses group %d", k)
		}
	}
	for _, o := range []*Op{op2, o} { // op2 reads the state of epoch 2
		pushSigned(t, o, [][2]int64{{7, 1}, {7, 1}, {9, 9}}, -1)
	}
	saveEpoch(t, j, op2, 3)
	got, want := groupRows(t, op2), groupRows(t, o)
	if !strings.Contains(want, "7 16 8 2 9 44") {
		t.Fatalf("group 7 after retracting its min: %s", want[:min(len(want), 400)])
	}
	if !strings.Contains(got, "7 16 8 2 9 44") || !strings.Contains(got, "9 20 11 0 100 145") {
		t.Fatalf("reloaded groups: %s", got)
	}
}

// TestValueStateLegacy: a group stored before values were stored apart
// (the whole multiset inline in the group's entry) is read, and its next
// save moves the values into entries of their own.
func TestValueStateLegacy(t *testing.T) {
	j := valueJob(t)
	o := restoredOp(t, j)
	// Group 1 with v = 4, 4, 6, the old way.
	bag := func(buf []byte, vals map[int64]uint64) []byte {
		buf = opkit.AppendUvarint(buf, uint64(len(vals)))
		for v, n := range vals {
			enc := opkit.EncodeDatum(nil, types.Int(v), types.TInt64)
			buf = opkit.AppendUvarint(buf, uint64(len(enc)))
			buf = append(buf, enc...)
			buf = opkit.AppendUvarint(buf, n)
		}
		return buf
	}
	vals := map[int64]uint64{4: 2, 6: 1}
	val := binary.AppendVarint(binary.AppendVarint(nil, 3), 3)                                     // the group's rows, count(*)
	val = bag(binary.AppendVarint(val, 2), vals)                                                   // count(DISTINCT): inner count, values
	val = bag(opkit.EncodeDatum(val, types.Int(4), types.TInt64), vals)                            // min
	val = bag(opkit.EncodeDatum(val, types.Int(6), types.TInt64), vals)                            // max
	val = bag(binary.AppendVarint(binary.AppendUvarint(binary.AppendVarint(val, 0), 10), 2), vals) // sum(DISTINCT): hi, lo, n; values
	pushSigned(t, o, [][2]int64{{1, 4}}, 1)                                                        // only to learn group 1's state key
	key := stateKeyOf(o, 0, nil)
	w := j.db.State().NewEpochBatch()
	r := w.NewRun()
	r.PutState(testJobID, 7, key, val)
	w.AddRun(r)
	if err := j.db.State().CommitEpoch([]*storage.Batch{w}, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	op2 := restoredOp(t, j)
	if got := groupRows(t, op2); got != "1 3 2 4 6 10" {
		t.Fatalf("legacy group restored as %q", got)
	}
	// Retracting a 4 rewrites the group: its entry and each value (2 values
	// x 4 accumulators), the unchanged one included.
	pushSigned(t, op2, [][2]int64{{1, 4}}, -1)
	if n := saveEpoch(t, j, op2, 2); n != 1+2*4 {
		t.Fatalf("wrote %d entries, want 9", n)
	}
	op3 := restoredOp(t, j)
	if got := groupRows(t, op3); got != "1 2 2 4 6 10" {
		t.Fatalf("rewritten legacy group restored as %q", got)
	}
	pushSigned(t, op3, [][2]int64{{1, 4}}, -1)
	if got := groupRows(t, op3); got != "1 1 1 6 6 6" {
		t.Fatalf("after retracting the last 4: %q", got)
	}
}

// TestMinMaxUnderChurn: min and max of groups whose values come and go at
// random (each group's extreme retracted again and again, values re-added)
// match the multiset's, checked after every batch.
func TestMinMaxUnderChurn(t *testing.T) {
	k, v := kvRefs()
	o := New(specOf([]expr.Expr{k}, true,
		accum.Spec{Kind: accum.Min, Arg: v, T: types.TInt64}, accum.Spec{Kind: accum.Max, Arg: v, T: types.TInt64}), Node{})
	r := rand.New(rand.NewPCG(1, 2))
	const groups = 4
	bag := make([]map[int64]int, groups)
	for i := range bag {
		bag[i] = map[int64]int{}
	}
	for round := range 2000 {
		var add, del [][2]int64
		for range 1 + r.IntN(20) {
			g := r.Int64N(groups)
			val := r.Int64N(300)
			if r.IntN(2) == 0 && len(bag[g]) > 0 {
				// Retract the current min or max half the time, else any value.
				lo, hi := int64(1<<62), int64(-1<<62)
				for x := range bag[g] {
					lo, hi = min(lo, x), max(hi, x)
				}
				switch r.IntN(3) {
				case 0:
					val = lo
				case 1:
					val = hi
				}
				if bag[g][val] > 0 {
					if bag[g][val]--; bag[g][val] == 0 {
						delete(bag[g], val)
					}
					del = append(del, [2]int64{g, val})
				}
				continue
			}
			bag[g][val]++
			add = append(add, [2]int64{g, val})
		}
		if len(add) > 0 {
			pushSigned(t, o, add, 1)
		}
		if len(del) > 0 {
			pushSigned(t, o, del, -1)
		}
		o.dirty = o.dirty[:0]
		clear(o.isDirty)
		for g := range int64(groups) {
			rows := [][2]int64{{g, 0}}
			rec := kvRecord(rows)
			gids := make([]int32, 1)
			o.gt.Lookup([]arrow.Array{rec.Column(0)}, 1, gids, false)
			rec.Release()
			want := "NULL NULL"
			if len(bag[g]) > 0 {
				lo, hi := int64(1<<62), int64(-1<<62)
				for x := range bag[g] {
					lo, hi = min(lo, x), max(hi, x)
				}
				want = fmt.Sprintf("%d %d", lo, hi)
			}
			got := "NULL NULL"
			if gids[0] >= 0 {
				mn, mx := o.accs[0].Result(gids[0]), o.accs[1].Result(gids[0])
				if !mn.Null {
					got = fmt.Sprintf("%d %d", mn.I, mx.I)
				}
			}
			if got != want {
				t.Fatalf("round %d, group %d: min, max = %s, want %s", round, g, got, want)
			}
		}
	}
}
