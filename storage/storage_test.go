package storage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Unit tests of the stream log (offsets, slicing, truncation, recovery of
// the end offset) and of CommitEpoch's atomicity, including across a
// simulated power loss (Pebble's crash-cloning memory filesystem).

var oneCol = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

// rec returns a one-column batch holding vs.
func rec(mem memory.Allocator, vs ...int64) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(vs, nil)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(oneCol, []arrow.Array{col}, int64(len(vs)))
}

// seq returns n values counting up from first.
func seq(first int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)
	}
	return out
}

func openMem(t *testing.T, fs vfs.FS) *DB {
	t.Helper()
	db, err := Open("db", Options{FS: fs, CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func appendVals(t *testing.T, db *DB, table uint64, part uint32, blocks ...[]int64) uint64 {
	t.Helper()
	var recs []arrow.RecordBatch
	for _, b := range blocks {
		recs = append(recs, rec(memory.DefaultAllocator, b...))
	}
	first, err := db.Log().Append(table, part, recs)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	return first
}

// readVals reads [from, to) and returns the values and, per row, the offset
// Log.Read reported for it (a block's first offset plus the row's index).
func readVals(t *testing.T, db *DB, table uint64, part uint32, from, to uint64) (vals []int64, offs []uint64) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	err := db.Log().Read(mem, table, part, from, to, func(first uint64, r arrow.RecordBatch) error {
		defer r.Release()
		col := r.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			vals = append(vals, col.Value(i))
			offs = append(offs, first+uint64(i))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return vals, offs
}

func bounds(t *testing.T, db *DB, table uint64, part uint32) (start, end uint64) {
	t.Helper()
	start, end, _, err := db.Log().Bounds(table, part)
	if err != nil {
		t.Fatal(err)
	}
	return start, end
}

// TestAppendLogConcurrent: concurrent appenders to one partition get
// disjoint offset ranges that tile the log with no gap, each appender's
// offsets increase, and every row is stored at the offset it was given.
func TestAppendLogConcurrent(t *testing.T) {
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	const writers, appends = 8, 40
	type span struct {
		first uint64
		vals  []int64
	}
	got := make([][]span, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			var last uint64
			for i := 0; i < appends; i++ {
				// Values name the writer and the append; one or two blocks per call.
				base := int64(w*1_000_000 + i*1000)
				blocks := [][]int64{seq(base, 1+r.IntN(5))}
				if r.IntN(2) == 0 {
					blocks = append(blocks, seq(base+500, 1+r.IntN(3)))
				}
				var recs []arrow.RecordBatch
				var all []int64
				for _, b := range blocks {
					recs = append(recs, rec(memory.DefaultAllocator, b...))
					all = append(all, b...)
				}
				first, err := db.Log().Append(7, 0, recs)
				for _, r := range recs {
					r.Release()
				}
				if err != nil {
					t.Error(err)
					return
				}
				if i > 0 && first <= last {
					t.Errorf("writer %d: append %d got offset %d after %d", w, i, first, last)
				}
				last = first
				got[w] = append(got[w], span{first, all})
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	want := map[uint64]int64{}
	var total uint64
	for _, spans := range got {
		for _, s := range spans {
			for i, v := range s.vals {
				off := s.first + uint64(i)
				if _, dup := want[off]; dup {
					t.Fatalf("offset %d assigned twice", off)
				}
				want[off] = v
			}
			total += uint64(len(s.vals))
		}
	}
	if start, end := bounds(t, db, 7, 0); start != 0 || end != total {
		t.Fatalf("LogBounds = [%d, %d), want [0, %d)", start, end, total)
	}
	vals, offs := readVals(t, db, 7, 0, 0, total)
	if uint64(len(vals)) != total {
		t.Fatalf("read %d rows, want %d", len(vals), total)
	}
	for i, v := range vals {
		if offs[i] != uint64(i) {
			t.Fatalf("row %d reported at offset %d", i, offs[i])
		}
		if want[uint64(i)] != v {
			t.Fatalf("offset %d holds %d, want %d", i, v, want[uint64(i)])
		}
	}
}

// TestReadLogSlicing: every range [from, to) returns exactly those rows,
// sliced out of the blocks that overlap it, with the right offsets.
func TestReadLogSlicing(t *testing.T) {
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	// Blocks of 3, 1, 4, 1, 5, 9, 2, 6 rows, appended one or several per
	// call; a row's value is ten times its offset.
	var all []int64
	for _, call := range [][]int{{3}, {1, 4}, {1}, {5, 9, 2}, {6}} {
		var blocks [][]int64
		for _, n := range call {
			b := make([]int64, n)
			for i := range b {
				b[i] = int64(len(all)+i) * 10
			}
			all = append(all, b...)
			blocks = append(blocks, b)
		}
		appendVals(t, db, 3, 1, blocks...)
	}
	_, end := bounds(t, db, 3, 1)
	if int(end) != len(all) {
		t.Fatalf("end = %d, want %d", end, len(all))
	}
	for from := uint64(0); from <= end+1; from++ {
		for to := from; to <= end+2; to++ {
			vals, offs := readVals(t, db, 3, 1, from, to)
			lo, hi := min(from, end), min(to, end)
			if !slices.Equal(vals, all[lo:hi]) {
				t.Fatalf("ReadLog[%d,%d) = %v, want %v", from, to, vals, all[lo:hi])
			}
			for i, o := range offs {
				if o != lo+uint64(i) {
					t.Fatalf("ReadLog[%d,%d): row %d at offset %d, want %d", from, to, i, o, lo+uint64(i))
				}
			}
		}
	}
	// Other partitions and tables are separate logs.
	if vals, _ := readVals(t, db, 3, 0, 0, 100); len(vals) != 0 {
		t.Fatalf("partition 0 has rows %v", vals)
	}
	if vals, _ := readVals(t, db, 4, 1, 0, 100); len(vals) != 0 {
		t.Fatalf("table 4 has rows %v", vals)
	}
}

// TestTruncateLog: truncation drops whole blocks below the cut and keeps
// the block holding it; the start offset moves, offsets do not.
func TestTruncateLog(t *testing.T) {
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	// Blocks start at 0, 4, 6, 9.
	appendVals(t, db, 1, 0, seq(0, 4), seq(4, 2))
	appendVals(t, db, 1, 0, seq(6, 3))
	appendVals(t, db, 1, 0, seq(9, 5))
	for _, c := range []struct {
		below, start uint64
	}{
		{0, 0}, {3, 0}, {4, 4}, {5, 4}, {3, 4}, // never moves back
		{8, 6}, {9, 9}, {100, 9}, // the last block is kept
	} {
		if err := db.Log().Truncate(1, 0, c.below); err != nil {
			t.Fatal(err)
		}
		start, end := bounds(t, db, 1, 0)
		if start != c.start || end != 14 {
			t.Fatalf("after TruncateLog(%d): bounds [%d, %d), want [%d, 14)", c.below, start, end, c.start)
		}
		vals, offs := readVals(t, db, 1, 0, 0, 14)
		if !slices.Equal(vals, seq(int64(c.start), int(14-c.start))) || offs[0] != c.start {
			t.Fatalf("after TruncateLog(%d): read %v from offset %d", c.below, vals, offs[0])
		}
	}
	if first := appendVals(t, db, 1, 0, seq(14, 1)); first != 14 {
		t.Fatalf("append after truncation at offset %d, want 14", first)
	}
}

// TestReopenRecoversLog: a reopened database continues each log at its end
// and keeps its truncation point.
func TestReopenRecoversLog(t *testing.T) {
	fs := vfs.NewMem()
	db := openMem(t, fs)
	appendVals(t, db, 1, 0, seq(0, 5), seq(5, 3))
	appendVals(t, db, 1, 0, seq(8, 2))
	appendVals(t, db, 1, 1, seq(100, 1))
	if err := db.Log().Truncate(1, 0, 6); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openMem(t, fs)
	defer db.Close()
	for _, c := range []struct {
		part       uint32
		start, end uint64
	}{{0, 5, 10}, {1, 0, 1}, {2, 0, 0}} {
		if start, end := bounds(t, db, 1, c.part); start != c.start || end != c.end {
			t.Fatalf("partition %d after reopen: [%d, %d), want [%d, %d)", c.part, start, end, c.start, c.end)
		}
	}
	if first := appendVals(t, db, 1, 0, seq(10, 2)); first != 10 {
		t.Fatalf("append after reopen at offset %d, want 10", first)
	}
	if vals, _ := readVals(t, db, 1, 0, 0, 12); !slices.Equal(vals, seq(5, 7)) {
		t.Fatalf("log after reopen: %v", vals)
	}
}

// epochBatch is one job's epoch: a state entry, a view row, an offset and
// changelog blocks on two partitions.
func epochBatch(db *DB, job uint64, n int) *Batch {
	b := db.State().NewEpochBatch()
	r := b.NewRun()
	r.PutState(job, 0, []byte("k"), fmt.Appendf(nil, "state%d", n))
	b.AddRun(r)
	b.PutViewRow(job, []byte("k"), fmt.Appendf(nil, "row%d", n))
	b.SetOffset(job, 1, 0, uint64(n))
	for p := uint32(0); p < 2; p++ {
		r := rec(memory.DefaultAllocator, seq(int64(n*100), 2)...)
		if err := b.AppendLog(50+job, p, r); err != nil {
			panic(err)
		}
		r.Release()
	}
	return b
}

// epochState reads back what epochBatch wrote for job: the state value, the
// view row, the offset and the changelog lengths of both partitions.
func epochState(t *testing.T, db *DB, job uint64) string {
	t.Helper()
	var state, row string
	if err := db.State().Scan(job, 0, func(_, v []byte) error { state = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Views().Scan(nil, job, func(_, v []byte) error { row = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	off, _, err := db.State().LoadOffset(job, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, e0 := bounds(t, db, 50+job, 0)
	_, e1 := bounds(t, db, 50+job, 1)
	return fmt.Sprintf("state=%q row=%q offset=%d changelog=%d,%d", state, row, off, e0, e1)
}

// TestCommitEpochAtomic: an epoch's writes (state, view rows, offsets,
// changelog blocks of several jobs and partitions) are invisible until
// CommitEpoch and all visible after it; changelog offsets continue each
// partition's log without gaps, also when CommitEpoch races with appends.
func TestCommitEpochAtomic(t *testing.T) {
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	b1, b2 := epochBatch(db, 1, 1), epochBatch(db, 2, 1)
	empty := `state="" row="" offset=0 changelog=0,0`
	if got := epochState(t, db, 1); got != empty {
		t.Fatalf("before commit: %s", got)
	}
	if err := db.State().CommitEpoch([]*Batch{b1, b2}, 1, []byte(`{"ID":1}`), true); err != nil {
		t.Fatal(err)
	}
	for job := uint64(1); job <= 2; job++ {
		if got, want := epochState(t, db, job), `state="state1" row="row1" offset=1 changelog=2,2`; got != want {
			t.Fatalf("job %d after commit: %s, want %s", job, got, want)
		}
	}
	recs, err := db.State().LoadRecords(0)
	if err != nil || len(recs) != 1 || string(recs[0]) != `{"ID":1}` {
		t.Fatalf("checkpoint records = %q, %v", recs, err)
	}

	// CommitEpoch and Log.Append on the same changelog partition, racing.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 2; i < 40; i++ {
			if err := db.State().CommitEpoch([]*Batch{epochBatch(db, 1, i)}, 0, nil, i%5 == 0); err != nil {
				t.Error(err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 40; i++ {
			appendVals(t, db, 51, 0, seq(-1, 1))
		}
	}()
	wg.Wait()
	_, end := bounds(t, db, 51, 0)
	if want := uint64(2 + 38*2 + 40); end != want {
		t.Fatalf("changelog end %d, want %d", end, want)
	}
	vals, offs := readVals(t, db, 51, 0, 0, end)
	if uint64(len(vals)) != end {
		t.Fatalf("changelog has %d rows below its end %d: a gap", len(vals), end)
	}
	for i, o := range offs {
		if o != uint64(i) {
			t.Fatalf("changelog row %d at offset %d", i, o)
		}
	}
	// Each epoch's two rows are adjacent and in epoch order.
	var epochs []int64
	for i := 0; i < len(vals); i++ {
		if vals[i] == -1 {
			continue
		}
		if i+1 >= len(vals) || vals[i+1] != vals[i]+1 {
			t.Fatalf("epoch block split at offset %d: %v", i, vals)
		}
		epochs = append(epochs, vals[i]/100)
		i++
	}
	if !slices.IsSorted(epochs) || len(epochs) != 39 {
		t.Fatalf("epochs in changelog order: %v", epochs)
	}
}

// TestCommitEpochPowerLoss: after a power loss an epoch is present whole or
// not at all, and every epoch committed before a synced write — a synced
// epoch or any log append, which is always synced — is present. Pebble's
// crash clone keeps every synced byte and a random part of the rest.
func TestCommitEpochPowerLoss(t *testing.T) {
	var lost, byAppend int // seeds that lost unsynced epochs; seeds made durable by an append
	for seed := uint64(0); seed < 40; seed++ {
		fs := vfs.NewCrashableMem()
		db := openMem(t, fs)
		r := rand.New(rand.NewPCG(seed, 2))
		durable, appended := 0, false
		n := 1 + r.IntN(6)
		for i := 1; i <= n; i++ {
			sync := r.IntN(3) == 0
			if err := db.State().CommitEpoch([]*Batch{epochBatch(db, 1, i)}, uint64(i), nil, sync); err != nil {
				t.Fatal(err)
			}
			if sync {
				durable, appended = i, false
			}
			if r.IntN(3) == 0 {
				appendVals(t, db, 9, 0, seq(0, 1))
				durable, appended = i, true
			}
		}
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: rand.New(rand.NewPCG(seed, 3))})
		db.Close()
		db = openMem(t, clone)
		got := epochState(t, db, 1)
		ok := false
		i := durable
		for ; i <= n && !ok; i++ {
			want := fmt.Sprintf(`state="state%d" row="row%d" offset=%d changelog=%d,%d`, i, i, i, 2*i, 2*i)
			if i == 0 {
				want = `state="" row="" offset=0 changelog=0,0`
			}
			ok = got == want
		}
		if !ok {
			t.Fatalf("seed %d: after power loss %s; want one of epochs %d..%d whole (%d was durable)", seed, got, durable, n, durable)
		}
		if i-1 < n {
			lost++
		}
		if appended && durable > 0 {
			byAppend++
		}
		db.Close()
	}
	// Both cases must occur, or the test proves less than it says.
	if lost == 0 || byAppend == 0 {
		t.Fatalf("%d seeds lost unsynced epochs, %d were made durable by an append", lost, byAppend)
	}
}

// TestLogOffsetAt: the retention cut for a time is the first offset of the
// oldest block written at or after it.
func TestLogOffsetAt(t *testing.T) {
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	var marks []time.Time // marks[i]: a moment between block i-1 and block i
	for i := 0; i < 6; i++ {
		time.Sleep(3 * time.Millisecond)
		marks = append(marks, time.Now())
		time.Sleep(3 * time.Millisecond)
		appendVals(t, db, 1, 0, seq(int64(3*i), 3)) // blocks start at 0, 3, 6, ...
	}
	for i, m := range marks {
		got, err := db.Log().OffsetAt(1, 0, m)
		if err != nil {
			t.Fatal(err)
		}
		if got != uint64(3*i) {
			t.Fatalf("LogOffsetAt(mark %d) = %d, want %d", i, got, 3*i)
		}
	}
	if got, _ := db.Log().OffsetAt(1, 0, time.Now().Add(time.Second)); got != 18 {
		t.Fatalf("LogOffsetAt(future) = %d, want the end 18", got)
	}
	if err := db.Log().Truncate(1, 0, 7); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Log().OffsetAt(1, 0, marks[0]); got != 6 {
		t.Fatalf("after truncation LogOffsetAt(mark 0) = %d, want the start 6", got)
	}
}

// TestOffsets lists committed offsets of every job.
func TestOffsets(t *testing.T) {
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	b := db.State().NewEpochBatch()
	b.SetOffset(7, 1, 0, 10)
	b.SetOffset(7, 1, 1, 12)
	b.SetOffset(9, 2, 0, 5)
	if err := db.State().CommitEpoch([]*Batch{b}, 1, nil, true); err != nil {
		t.Fatal(err)
	}
	got, err := db.State().Offsets()
	if err != nil {
		t.Fatal(err)
	}
	want := []Offset{{7, 1, 0, 10}, {7, 1, 1, 12}, {9, 2, 0, 5}}
	if !slices.Equal(got, want) {
		t.Fatalf("Offsets() = %v, want %v", got, want)
	}
}

// TestEpochLayout: an epoch's runs and single writes are committed in key
// order, the last write to a key wins, and a run written out of order is
// still applied correctly.
func TestEpochLayout(t *testing.T) {
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	b := db.State().NewEpochBatch()
	r1, r2, r3 := b.NewRun(), b.NewRun(), b.NewRun()
	for i := 0; i < 100; i++ {
		r1.PutState(1, 0, []byte{byte(i)}, []byte("a"))
		r2.PutState(1, 0, []byte{200, byte(i)}, []byte("b"))
	}
	r3.PutViewRow(9, []byte("z"), []byte("row-z"))
	r3.PutViewRow(9, []byte("a"), []byte("row-a")) // out of order
	r3.DeleteViewRow(9, []byte("z"))
	b.AddRun(r2) // handed over out of order
	b.AddRun(r3)
	b.AddRun(r1)
	b.SetOffset(1, 5, 0, 42)

	var l layout
	for _, r := range b.runs {
		if r != r3 { // r3 is out of order: Pebble sorts it
			l.addRun(r)
		}
	}
	if err := l.addBatch(b.b); err != nil {
		t.Fatal(err)
	}
	all, err := l.build(db.pdb)
	if err != nil {
		t.Fatal(err)
	}
	var prev []byte
	sorted := true
	rd := all.Reader()
	for {
		_, k, _, ok, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if prev != nil && string(k) < string(prev) {
			sorted = false
		}
		prev = k
	}
	if !sorted {
		t.Fatal("the ordered runs and single writes were not laid out in key order")
	}

	if err := db.State().CommitEpoch([]*Batch{b}, 3, []byte("{}"), true); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := db.State().Scan(1, 0, func(key, val []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	var rows []string
	if err := db.Views().Scan(nil, 9, func(key, row []byte) error { rows = append(rows, string(row)); return nil }); err != nil {
		t.Fatal(err)
	}
	off, ok, err := db.State().LoadOffset(1, 5, 0)
	if err != nil || !ok || off != 42 || n != 200 || !slices.Equal(rows, []string{"row-a"}) {
		t.Fatalf("after commit: %d state rows, view rows %q, offset %d %v %v", n, rows, off, ok, err)
	}
}
