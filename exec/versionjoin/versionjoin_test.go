package versionjoin

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"slices"
	"strings"
	"testing"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// sink is an outlet that keeps what it is given.
type sink struct{ rows []string }

func (s *sink) Emit(_ *expr.Ctx, c op.Chunk) error {
	defer c.Rec.Release()
	for i := 0; i < int(c.Rec.NumRows()); i++ {
		var f []string
		for j := 0; j < int(c.Rec.NumCols()); j++ {
			d := types.DatumAt(c.Rec.Column(j), i, types.TInt64)
			if d.Null {
				f = append(f, "NULL")
			} else {
				f = append(f, fmt.Sprint(d.I))
			}
		}
		s.rows = append(s.rows, strings.Join(f, " "))
	}
	return nil
}

func (s *sink) take() string {
	slices.Sort(s.rows)
	out := strings.Join(s.rows, ", ")
	s.rows = nil
	return out
}

// snapState is an opkit.State of a backend that snapshots: at each
// checkpoint barrier it keeps the operator's snapshot, which a restored
// instance scans.
type snapState struct {
	keys, vals []string
}

func (s *snapState) Get(key []byte) ([]byte, error) { return nil, nil }
func (s *snapState) Scan(fn func(key, val []byte) error) error {
	for i := range s.keys {
		if err := fn([]byte(s.keys[i]), []byte(s.vals[i])); err != nil {
			return err
		}
	}
	return nil
}
func (s *snapState) ScanPrefix([]byte, func(key, val []byte) error) error { return nil }
func (s *snapState) Loaded()                                              {}
func (s *snapState) Commit(_ *storage.Batch, b *op.Barrier, _, _ bool, _ func(*opkit.Writer) error, encode func(uint64) *opkit.Snapshot) (bool, error) {
	if !b.Checkpoint {
		return false, nil
	}
	snap := encode(b.Epoch)
	s.keys, s.vals = nil, nil
	for i := 0; i < snap.Len(); i++ {
		k, v := snap.Entry(i)
		s.keys, s.vals = append(s.keys, string(k)), append(s.vals, string(v))
	}
	return false, nil
}

// rows builds a chunk of BIGINT rows (k, ts, v) with ts as a timestamp.
func rows(vals ...int64) op.Chunk {
	ts := []types.T{types.TInt64, types.TTimestamp, types.TInt64}
	var encs []string
	for i := 0; i < len(vals); i += 3 {
		var b []byte
		for j, t := range ts {
			if vals[i+j] < 0 {
				b = opkit.EncodeDatum(b, types.Null, t)
			} else {
				b = opkit.EncodeDatum(b, types.Int(vals[i+j]), t)
			}
		}
		encs = append(encs, string(b))
	}
	return op.Chunk{Rec: opkit.DecodeRecord(ts, encs)}
}

func spec(left bool) Spec {
	ts := []types.T{types.TInt64, types.TTimestamp, types.TInt64}
	return Spec{Left: left, ProbeTypes: ts, BuildTypes: ts,
		ProbeKeys: []expr.Expr{&expr.ColRef{Idx: 0, T: types.TInt64}},
		BuildKeys: []expr.Expr{&expr.ColRef{Idx: 0, T: types.TInt64}},
		ProbeTime: 1, BuildTime: 1}
}

// TestOpRestore: probe rows wait for the watermark, then join the latest
// version at or before their time; a checkpoint's snapshot restored into
// a new instance (a crash) gives the same rows as the instance that went
// on, versions the watermark passed are pruned but the latest, and late
// probe rows are counted and dropped.
func TestOpRestore(t *testing.T) {
	ectx := &expr.Ctx{Mem: opkit.Mem}
	st := &snapState{}
	out := &sink{}
	o := New(spec(true), out, st)
	push := func(o *Op, c op.Chunk, in int) {
		if err := o.Push(ectx, c, in); err != nil {
			t.Fatal(err)
		}
	}
	advance := func(o *Op, wm int64, epoch uint64) int64 {
		late, err := o.AdvanceWatermark(ectx, op.Watermark{At: wm})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Barrier(ectx, &op.Barrier{Epoch: epoch, Checkpoint: true}, nil); err != nil {
			t.Fatal(err)
		}
		return late
	}
	push(o, rows(1, 10, 100, 1, 20, 200, 2, 5, 500), 1)
	push(o, rows(1, 15, 1, 1, 25, 2, 2, 4, 3, 3, 30, 4, -1, 30, 5), 0)
	advance(o, 16, 1)
	if got, want := out.take(), "1 15 1 1 10 100, 2 4 3 NULL NULL NULL"; got != want {
		t.Fatalf("at 16: got %q, want %q", got, want)
	}
	// Epoch 2 is checkpointed: restore a second instance from it.
	push(o, rows(1, 22, 220, 3, 29, 300), 1)
	advance(o, 18, 2)
	r := New(spec(true), &sink{}, st)
	if err := r.Load(); err != nil {
		t.Fatal(err)
	}
	rout := r.out.(*sink)
	for _, x := range []*Op{o, r} {
		if x.Waiting() != 3 || x.Versions() != 5 {
			t.Fatalf("waiting %d versions %d, want 3 and 5", x.Waiting(), x.Versions())
		}
		push(x, rows(3, 12, 9), 0) // late: behind 18
		push(x, rows(3, 31, 7), 0)
		if late := advance(x, 40, 3); late != 1 {
			t.Fatalf("late %d, want 1", late)
		}
		// Key 1 keeps only its version at 22; keys 2 and 3 their one.
		if x.Versions() != 3 {
			t.Fatalf("versions %d after the watermark passed them, want 3", x.Versions())
		}
	}
	want := "1 25 2 1 22 220, 3 30 4 3 29 300, 3 31 7 3 29 300, NULL 30 5 NULL NULL NULL"
	if got := out.take(); got != want {
		t.Fatalf("running instance: got %q, want %q", got, want)
	}
	if got := rout.take(); got != want {
		t.Fatalf("restored instance: got %q, want %q", got, want)
	}
}

// TestBatch: the rule over all rows, inner form: the later write wins
// between versions of a key at the same time.
func TestBatch(t *testing.T) {
	ectx := &expr.Ctx{Mem: opkit.Mem}
	out := &sink{}
	build := rows(1, 10, 100, 1, 20, 200, 1, 20, 201)
	probe := rows(1, 9, 1, 1, 10, 2, 1, 25, 3, 2, 30, 4)
	if err := Batch(ectx, spec(false), []arrow.RecordBatch{build.Rec}, []arrow.RecordBatch{probe.Rec}, out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.take(), "1 10 2 1 10 100, 1 25 3 1 20 201"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
