package exec

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// TestEpochBound: with MaxEpochGroups set, a job's sources stop reading
// once an epoch holds that many changed groups and ask for a barrier
// (EpochFull); every epoch's batch then stays near the bound, however long
// the barrier takes, and the view is exact at the end. Once the state
// spills out of its cache, the bound is half.
func TestEpochBound(t *testing.T) {
	t.Run("fits", func(t *testing.T) { testEpochBound(t, 0, 40000, false) })
	t.Run("spills", func(t *testing.T) { testEpochBound(t, 2<<20, 20000, false) })
	// A view of the stream's rows: the sink's rows bound its epochs.
	t.Run("rows", func(t *testing.T) { testEpochBound(t, 0, 40000, true) })
}

func testEpochBound(t *testing.T, cache int64, bound int, rowsView bool) {
	db, err := storage.Open("db", storage.Options{FS: storage.MemFS(), CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const blocks, perBlock, maxGroups = 200, 1000, 40000
	src := &storage.TableDef{ID: 1, Name: "t", Kind: storage.KindStream, Partitions: 1,
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "v", Type: types.TInt64}}}
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	var recs []arrow.RecordBatch
	for b := 0; b < blocks; b++ {
		kb, vb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
		for i := 0; i < perBlock; i++ {
			kb.Append(int64(b*perBlock + i)) // every key distinct: each row is a new group
			vb.Append(1)
		}
		k, v := kb.NewArray(), vb.NewArray()
		recs = append(recs, array.NewRecordBatch(schema, []arrow.Array{k, v}, perBlock))
		kb.Release()
		vb.Release()
	}
	if _, err := db.Log().Append(src.ID, 0, recs); err != nil {
		t.Fatal(err)
	}
	view := &storage.TableDef{ID: 2, Name: "v", Kind: storage.KindView, KeyCols: []int{0},
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "n", Type: types.TInt64}}}
	var pl plan.Plan = &plan.HashAgg{In: &plan.ScanStream{Table: src}, Keys: []expr.Expr{col(0, types.TInt64)},
		Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}}}
	writes := 2 // a changed group is a state write and a view row
	if rowsView {
		pl, writes = &plan.ScanStream{Table: src}, 1
	}
	full := make(chan struct{}, 1)
	var pokes atomic.Int64
	j, err := StartJob(db, JobSpec{ID: 2, Name: "v", Plan: pl, View: view, Parallelism: 2,
		MaxEpochGroups: maxGroups, StateCacheBytes: cache, EpochFull: func() {
			pokes.Add(1)
			select {
			case full <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Stop()

	// Slack: the rows on their way when the bound is reached — the block
	// being routed and up to 4 messages queued per instance.
	const slack = perBlock + 2*4*perBlock
	ctx := context.Background()
	ends := j.LogEnds()
	epochs, most := 0, 0
	for epoch := uint64(1); !j.Reached(ends) || epochs == 0; epoch++ {
		select {
		case <-full: // the sources wait for this barrier
		case <-time.After(200 * time.Millisecond):
		}
		if err := j.InjectBarrier(ctx, &Barrier{Epoch: epoch}); err != nil {
			t.Fatal(err)
		}
		b, err := j.AwaitBarrier(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		// Each changed group is one state write and one view row; plus
		// the source offset.
		groups := (int(b.Count()) - 1) / writes
		most = max(most, groups)
		// The first two epochs end before anything can be evicted (a group
		// is, once its state is committed): their bound is the full one.
		if groups > bound+slack && !(epoch <= 2 && cache > 0 && groups <= maxGroups+slack) {
			t.Fatalf("epoch %d changed %d groups; the bound is %d (+%d in flight)", epoch, groups, bound, slack)
		}
		if err := db.State().CommitEpoch([]*storage.Batch{b}, 0, nil, false); err != nil {
			t.Fatal(err)
		}
		j.Committed(epoch)
		epochs++
	}
	if j.Evicted.Load() > 0 != (cache > 0) && !rowsView {
		t.Fatalf("%d groups evicted with a state cache of %d bytes", j.Evicted.Load(), cache)
	}
	if pokes.Load() == 0 || epochs < blocks*perBlock/(bound+slack) {
		t.Fatalf("%d epochs, %d requests for a barrier: the bound never held the sources back", epochs, pokes.Load())
	}
	// One more barrier flushes the last changes; then every key counts once.
	epoch := uint64(epochs + 1)
	if err := j.InjectBarrier(ctx, &Barrier{Epoch: epoch}); err != nil {
		t.Fatal(err)
	}
	b, err := j.AwaitBarrier(ctx, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.State().CommitEpoch([]*storage.Batch{b}, 0, nil, false); err != nil {
		t.Fatal(err)
	}
	rows := 0
	if err := db.Views().Scan(db.Reader(), view.ID, func(key, row []byte) error { rows++; return nil }); err != nil {
		t.Fatal(err)
	}
	if rows != blocks*perBlock {
		t.Fatalf("the view has %d rows, want %d", rows, blocks*perBlock)
	}
	t.Logf("%d epochs of at most %d changed groups (bound %d), %d barrier requests", epochs, most, bound, pokes.Load())
}

// TestLateAckCommitsWithNextEpoch: when a round stops waiting for a job's
// barrier (checkpoint.timeout), the job's acknowledgement of that epoch
// arrives at the next round's wait. Its writes must commit then, before
// the next epoch's own (which rewrite the same keys), never be dropped:
// the job's offsets and in-memory state already include them.
func TestLateAckCommitsWithNextEpoch(t *testing.T) {
	db, err := storage.Open("db", storage.Options{FS: storage.MemFS(), CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const keys = 1000
	src := &storage.TableDef{ID: 1, Name: "t", Kind: storage.KindStream, Partitions: 1,
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}}}
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	appendKeys := func(n int) {
		kb := array.NewInt64Builder(memory.DefaultAllocator)
		defer kb.Release()
		for i := 0; i < n; i++ {
			kb.Append(int64(i))
		}
		k := kb.NewArray()
		defer k.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{k}, int64(n))
		defer rec.Release()
		if _, err := db.Log().Append(src.ID, 0, []arrow.RecordBatch{rec}); err != nil {
			t.Fatal(err)
		}
	}
	view := &storage.TableDef{ID: 2, Name: "v", Kind: storage.KindView, KeyCols: []int{0},
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "n", Type: types.TInt64}}}
	pl := &plan.HashAgg{In: &plan.ScanStream{Table: src}, Keys: []expr.Expr{col(0, types.TInt64)},
		Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}}}
	j, err := StartJob(db, JobSpec{ID: 2, Name: "v", Plan: pl, View: view, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Stop()
	ctx := context.Background()
	readAll := func() {
		ends := j.LogEnds()
		for deadline := time.Now().Add(time.Minute); !j.Reached(ends); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the job did not read its input")
			}
		}
	}

	// Epoch 1 counts every key once; its round gives up before the ack.
	appendKeys(keys)
	readAll()
	gaveUp, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := j.AwaitBarrier(gaveUp, 1); err == nil {
		t.Fatal("AwaitBarrier with a done context returned no error")
	}
	if err := j.InjectBarrier(ctx, &Barrier{Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	// Epoch 2 counts half the keys again: its writes rewrite some of epoch
	// 1's keys and leave the others as epoch 1 wrote them.
	appendKeys(keys / 2)
	readAll()
	if err := j.InjectBarrier(ctx, &Barrier{Epoch: 2}); err != nil {
		t.Fatal(err)
	}
	b, err := j.AwaitBarrier(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.State().CommitEpoch([]*storage.Batch{b}, 0, nil, false); err != nil {
		t.Fatal(err)
	}
	j.Committed(2)

	counts := map[int64]int64{}
	err = batch.Run(&plan.Ctx{Context: ctx, DB: db, Expr: &expr.Ctx{Mem: memory.DefaultAllocator}}, &plan.ScanView{View: view},
		func(rec arrow.RecordBatch) error {
			defer rec.Release()
			k, n := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
			for i := 0; i < int(rec.NumRows()); i++ {
				counts[k.Value(i)] = n.Value(i)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != keys {
		t.Fatalf("the view has %d keys after the late epoch committed, want %d", len(counts), keys)
	}
	for k, n := range counts {
		want := int64(1)
		if k < keys/2 {
			want = 2
		}
		if n != want {
			t.Fatalf("key %d counts %d, want %d", k, n, want)
		}
	}
}

// TestExprCtxKeyFormat: a view's job keys as its state was written: raw
// intervals and floats below KeyFormatCanonical, raw jsonb below
// KeyFormatJSONB; a batch query (no view) canonicalises everything.
func TestExprCtxKeyFormat(t *testing.T) {
	for _, c := range []struct {
		view          *storage.TableDef
		raw, rawJSONB bool
	}{
		{nil, false, false},
		{&storage.TableDef{KeyFormat: 0}, true, true},
		{&storage.TableDef{KeyFormat: storage.KeyFormatCanonical}, false, true},
		{&storage.TableDef{KeyFormat: storage.KeyFormatJSONB}, false, false},
	} {
		ctx := (&Job{spec: JobSpec{View: c.view}}).exprCtx()
		if ctx.RawKeys != c.raw || ctx.RawJSONBKeys != c.rawJSONB {
			t.Errorf("view %+v: RawKeys %v RawJSONBKeys %v, want %v %v", c.view, ctx.RawKeys, ctx.RawJSONBKeys, c.raw, c.rawJSONB)
		}
	}
}
