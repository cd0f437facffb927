package session

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// sessionRow is (key, time µs, price); null: no time.
type sessionRow struct {
	k, ts, price int64
	null         bool
}

func sessionSpec(gap int64) *Spec {
	return &Spec{
		Keys: []expr.Expr{col(0, types.TInt64)},
		Time: col(1, types.TTimestamp),
		Gap:  gap,
		Aggs: []accum.Spec{
			{Kind: accum.CountStar, T: types.TInt64},
			{Kind: accum.Sum, Arg: col(2, types.TInt64), T: types.TNumeric},
			{Kind: accum.Min, Arg: col(2, types.TInt64), T: types.TInt64},
			{Kind: accum.Max, Arg: col(2, types.TInt64), T: types.TInt64},
		},
	}
}

func sessionRecord(rows []sessionRow) arrow.RecordBatch {
	ts := []types.T{types.TInt64, types.TTimestamp, types.TInt64}
	bls := make([]array.Builder, 3)
	for i, t := range ts {
		bls[i] = types.NewBuilder(opkit.Mem, t)
	}
	for _, r := range rows {
		types.AppendDatum(bls[0], types.Int(r.k), ts[0])
		if r.null {
			bls[1].AppendNull()
		} else {
			types.AppendDatum(bls[1], types.Datum{I: r.ts}, ts[1])
		}
		types.AppendDatum(bls[2], types.Int(r.price), ts[2])
	}
	cols := make([]arrow.Array, 3)
	for i, b := range bls {
		cols[i] = b.NewArray()
		b.Release()
	}
	return opkit.NewRecord(ts, cols, len(rows))
}

// bruteSessions computes the sessions by sorting each key's rows by time.
func bruteSessions(rows []sessionRow, gap int64) []string {
	byKey := map[int64][]sessionRow{}
	for _, r := range rows {
		if !r.null {
			byKey[r.k] = append(byKey[r.k], r)
		}
	}
	var out []string
	for k, rs := range byKey {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ts < rs[j].ts })
		for i := 0; i < len(rs); {
			j := i + 1
			for j < len(rs) && rs[j].ts-rs[j-1].ts < gap {
				j++
			}
			var sum int64
			lo, hi := rs[i].price, rs[i].price
			for _, r := range rs[i:j] {
				sum += r.price
				lo, hi = min(lo, r.price), max(hi, r.price)
			}
			out = append(out, fmt.Sprintf("%d %d %d %d %d %d %d", k, rs[i].ts, rs[j-1].ts+gap, j-i, sum, lo, hi))
			i = j
		}
	}
	sort.Strings(out)
	return out
}

func sessionText(rec arrow.RecordBatch, i int, ts []types.T) string {
	parts := make([]string, len(ts))
	for c, t := range ts {
		d := types.DatumAt(rec.Column(c), i, t)
		if t.Kind == types.Numeric {
			parts[c] = types.TextOf(d, t)
		} else {
			parts[c] = fmt.Sprint(d.I)
		}
	}
	return strings.Join(parts, " ")
}

// TestSessionMerge feeds rows in random order and random batches: the
// sessions, and the changes emitted at each barrier applied to a
// multiset, always equal the sessions computed by sorting.
func TestSessionMerge(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	const gap = 10
	for trial := 0; trial < 50; trial++ {
		var rows []sessionRow
		for i := 0; i < 200; i++ {
			rows = append(rows, sessionRow{k: rng.Int63n(4), ts: rng.Int63n(300), price: rng.Int63n(100) - 20, null: rng.Intn(50) == 0})
		}
		o := newOp(sessionSpec(gap))
		ectx := &expr.Ctx{Mem: opkit.Mem}
		view := map[string]int{}
		emit := func(c op.Chunk) error {
			defer c.Rec.Release()
			for i := 0; i < int(c.Rec.NumRows()); i++ {
				view[sessionText(c.Rec, i, o.outTs)] += int(c.Ops[i].Sign())
			}
			return nil
		}
		for fed := 0; fed < len(rows); {
			n := min(len(rows)-fed, 1+rng.Intn(30))
			rec := sessionRecord(rows[fed : fed+n])
			if err := o.Fold(ectx, rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			fed += n
			if _, err := o.AdvanceWatermark(ectx, op.Watermark{At: op.NoWatermark}); err != nil {
				t.Fatal(err)
			}
			if err := o.changes(emit); err != nil {
				t.Fatal(err)
			}
			o.finish()
			want := bruteSessions(rows[:fed], gap)
			var got []string
			for r, m := range view {
				if m < 0 || m > 1 {
					t.Fatalf("trial %d: row %s has multiplicity %d in the view", trial, r, m)
				}
				if m == 1 {
					got = append(got, r)
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d after %d rows: view\n%s\nwant\n%s", trial, fed, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

// TestSessionClose: the watermark closes sessions (they leave memory), a
// row that would start a session ending at or before it is late, and a
// row behind it that joins an open session is not; with eowc each closed
// session is emitted once.
func TestSessionClose(t *testing.T) {
	const gap = 10
	o := newOp(sessionSpec(gap))
	o.eowc = true
	o.timed = true // its time is a WATERMARK FOR column (Node.Timed)
	ectx := &expr.Ctx{Mem: opkit.Mem}
	var out []string
	emit := func(c op.Chunk) error {
		defer c.Rec.Release()
		for i := 0; i < int(c.Rec.NumRows()); i++ {
			if c.Ops[i] != types.ChangeInsert {
				t.Fatalf("eowc emitted %v", c.Ops[i])
			}
			out = append(out, sessionText(c.Rec, i, o.outTs))
		}
		return nil
	}
	step := func(rows []sessionRow, wm int64) int64 {
		t.Helper()
		rec := sessionRecord(rows)
		if err := o.Fold(ectx, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		late, err := o.AdvanceWatermark(ectx, op.Watermark{At: wm})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.changes(emit); err != nil {
			t.Fatal(err)
		}
		o.finish()
		return late
	}
	step([]sessionRow{{k: 1, ts: 0, price: 1}, {k: 1, ts: 5, price: 2}, {k: 2, ts: 30, price: 3}}, 14)
	if len(out) != 0 {
		t.Fatalf("emitted before any session closed: %v", out)
	}
	// Watermark 15 closes key 1's [0, 15).
	step(nil, 15)
	if want := []string{"1 0 15 2 3 1 2"}; !slices.Equal(out, want) {
		t.Fatalf("closed: %v, want %v", out, want)
	}
	if o.gt.Len()-len(o.gt.Free) != 1 || len(o.All()) != 1 {
		t.Fatalf("%d keys and %d sessions in memory after closing, want 1 and 1", o.gt.Len()-len(o.gt.Free), len(o.All()))
	}
	// 4 (ends 14 <= 15) is late; 21 joins key 2's [30, 40); 10, behind
	// the watermark, reaches no session but its own ends at 20: kept.
	if late := step([]sessionRow{{k: 1, ts: 4, price: 100}, {k: 2, ts: 21, price: 4}, {k: 2, ts: 10, price: 5}}, 15); late != 1 {
		t.Fatalf("%d late rows, want 1", late)
	}
	step(nil, 100)
	want := []string{"1 0 15 2 3 1 2", "2 10 20 1 5 5 5", "2 21 40 2 7 3 4"}
	sort.Strings(out)
	if !slices.Equal(out, want) {
		t.Fatalf("closed: %v, want %v", out, want)
	}
	if len(o.All()) != 0 || o.ends.Len() != 0 {
		t.Fatalf("%d sessions and %d heap entries left", len(o.All()), o.ends.Len())
	}
}

func col(i int, t types.T) *expr.ColRef { return &expr.ColRef{Idx: i, T: t} }
