package exec

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/streamdb/streamdb/exec/disttest"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/exchange"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
	"google.golang.org/grpc"
)

// TestDistributedJobParts runs SELECT k, count(*), max(v) FROM t WHERE v
// >= -3 GROUP BY k as three parts of one distributed job (DistPart), each
// on its own Pebble database with its own Flight server on loopback: six
// splits and three aggregate instances placed over three "nodes", rows
// shuffled by key group over the exchange, the same barrier epochs injected
// on every node and each node's part committed on its own. After every
// epoch the union of the three views equals the batch query over the rows
// every split had read at that barrier, each key on exactly one node.
func TestDistributedJobParts(t *testing.T) {
	const splits, perEpoch = 6, 500
	nodes := []string{"n1", "n2", "n3"}
	src := &storage.TableDef{ID: 1, Name: "t", Kind: storage.KindStream, Partitions: splits,
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "v", Type: types.TInt64}}}
	view := &storage.TableDef{ID: 2, Name: "v", Kind: storage.KindView, KeyCols: []int{0},
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "n", Type: types.TInt64}, {Name: "m", Type: types.TInt64}}}
	filter := &plan.Filter{In: &plan.ScanStream{Table: src}, Pred: &expr.Func{Name: ">=", Args: []expr.Expr{col(1, types.TInt64),
		&expr.Const{D: types.Int(-3), T: types.TInt64}}, T: types.TBool}}
	pl := &plan.HashAgg{In: filter, Keys: []expr.Expr{col(0, types.TInt64)},
		Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}, {Kind: plan.AggMax, Arg: col(1, types.TInt64), T: types.TInt64}}}
	if err := CheckDistShape(pl, 3); err != nil {
		t.Fatal(err)
	}
	if err := CheckDistShape(&plan.ScanStream{Table: src}, 3); err == nil {
		t.Fatal("a view of a stream's rows passes CheckDistShape")
	}
	placement := DistPart{Job: "v.1", Instances: []string{"n1", "n2", "n3"}, Splits: [][]string{{"n1", "n2", "n3", "n1", "n2", "n3"}}}
	dbs, jobs := startDistParts(t, nodes, placement, JobSpec{ID: 2, Name: "v", Plan: pl, View: view, Parallelism: 3})
	// Every node's log holds every split's rows; each reads only its own.
	read := make([]int, splits) // rows of each split appended so far
	appendRows := func() {
		for s := range splits {
			kb, vb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
			for i := read[s]; i < read[s]+perEpoch+s*10; i++ {
				k, v := disttest.Row(s, i)
				kb.Append(k)
				vb.Append(v)
			}
			n := kb.Len()
			rec := array.NewRecordBatch(opkitSchema(), []arrow.Array{kb.NewArray(), vb.NewArray()}, int64(n))
			for _, db := range dbs {
				if _, err := db.Log().Append(src.ID, uint32(s), []arrow.RecordBatch{rec}); err != nil {
					t.Fatal(err)
				}
			}
			rec.Release()
			read[s] += n
		}
	}
	for epoch := uint64(1); epoch <= 4; epoch++ {
		appendRows()
		distEpoch(t, nodes, dbs, jobs, epoch)
		// The union of the nodes' views is the batch query.
		want := disttest.Want(read)
		got := distViewRows(t, nodes, dbs, view, epoch)
		if len(got) != len(want) {
			t.Fatalf("epoch %d: the views hold %d keys, the batch query %d", epoch, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Fatalf("epoch %d: key %d is %v, the batch query says %v", epoch, k, got[k], w)
			}
		}
	}
	if s := exchange.ReadStats(); s.BytesSent == 0 {
		t.Fatal("no rows crossed the exchange")
	}
}

func opkitSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
}

// TestDistributedJoinParts runs SELECT a.k, count(*), max(b.w) FROM a
// JOIN b ON a.k = b.k GROUP BY a.k as three parts of one distributed job:
// each side's three splits on different nodes, both sides shuffled by the
// join key over the exchange (edge 0 for a, 1 for b) to the join's three
// instances, and each join instance's rows aggregated by the aggregate
// instance of the same number beside it (the GROUP BY is by the join key).
// After every epoch the union of the nodes' views equals the join and
// aggregate computed over the rows every split had read. A GROUP BY by
// another column, or a LEFT JOIN, is refused with 0A000.
func TestDistributedJoinParts(t *testing.T) {
	const splits, perSplit = 3, 120
	nodes := []string{"n1", "n2", "n3"}
	cols := []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "v", Type: types.TInt64}}
	ta := &storage.TableDef{ID: 1, Name: "a", Kind: storage.KindStream, Partitions: splits, Columns: cols}
	tb := &storage.TableDef{ID: 3, Name: "b", Kind: storage.KindStream, Partitions: splits, Columns: cols}
	view := &storage.TableDef{ID: 2, Name: "v", Kind: storage.KindView, KeyCols: []int{0},
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "n", Type: types.TInt64}, {Name: "m", Type: types.TInt64}}}
	join := func(kind plan.JoinKind) *plan.HashJoin {
		return &plan.HashJoin{Left: &plan.ScanStream{Table: ta}, Right: &plan.ScanStream{Table: tb}, Kind: kind,
			LeftKeys: []expr.Expr{col(0, types.TInt64)}, RightKeys: []expr.Expr{col(0, types.TInt64)}}
	}
	aggOf := func(in plan.Plan, key int) *plan.HashAgg {
		return &plan.HashAgg{In: in, Keys: []expr.Expr{col(key, types.TInt64)},
			Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}, {Kind: plan.AggMax, Arg: col(3, types.TInt64), T: types.TInt64}}}
	}
	pl := aggOf(join(plan.JoinInner), 0)
	if err := CheckDistShape(pl, 3); err != nil {
		t.Fatal(err)
	}
	if err := CheckDistShape(aggOf(join(plan.JoinInner), 2), 3); err != nil {
		t.Fatalf("GROUP BY b.k, the join key's other side: %v", err)
	}
	for what, p := range map[string]plan.Plan{
		"GROUP BY a.v": aggOf(join(plan.JoinInner), 1),
		"a LEFT JOIN":  aggOf(join(plan.JoinLeft), 0),
		"no GROUP BY":  join(plan.JoinInner),
	} {
		if err := CheckDistShape(p, 3); sqlerr.Code(err) != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), "distributed") {
			t.Fatalf("%s: CheckDistShape %v, want a 0A000 refusal", what, err)
		}
	}
	if srcs, err := DistSources(pl, 3); err != nil || len(srcs) != 2 || srcs[0] != (DistSource{"a", splits}) || srcs[1] != (DistSource{"b", splits}) {
		t.Fatalf("DistSources of the join: %v, %v", srcs, err)
	}
	sent := exchange.ReadStats().BytesSent
	placement := DistPart{Job: "v.1", Instances: []string{"n1", "n2", "n3"},
		Splits: [][]string{{"n1", "n2", "n3"}, {"n2", "n3", "n1"}}}
	dbs, jobs := startDistParts(t, nodes, placement, JobSpec{ID: 2, Name: "v", Plan: pl, View: view, Parallelism: 3})
	// Every node's log holds every split's rows of both tables; each
	// node reads only its own splits.
	cntA, cntB, maxB := map[int64]int64{}, map[int64]int64{}, map[int64]int64{}
	next := 0
	appendRows := func() {
		for s := range splits {
			for ti, tab := range []*storage.TableDef{ta, tb} {
				kb, vb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
				for i := next; i < next+perSplit; i++ {
					k, v := int64((i*7+s*3+ti)%37), int64(i%101-50)
					kb.Append(k)
					vb.Append(v)
					if ti == 0 {
						cntA[k]++
					} else {
						if cntB[k] == 0 || v > maxB[k] {
							maxB[k] = v
						}
						cntB[k]++
					}
				}
				rec := array.NewRecordBatch(opkitSchema(), []arrow.Array{kb.NewArray(), vb.NewArray()}, int64(perSplit))
				for _, db := range dbs {
					if _, err := db.Log().Append(tab.ID, uint32(s), []arrow.RecordBatch{rec}); err != nil {
						t.Fatal(err)
					}
				}
				rec.Release()
			}
			next += perSplit
		}
	}
	for epoch := uint64(1); epoch <= 3; epoch++ {
		appendRows()
		distEpoch(t, nodes, dbs, jobs, epoch)
		want := map[int64][2]int64{}
		for k, n := range cntA {
			if cntB[k] > 0 {
				want[k] = [2]int64{n * cntB[k], maxB[k]}
			}
		}
		got := distViewRows(t, nodes, dbs, view, epoch)
		if len(got) != len(want) {
			t.Fatalf("epoch %d: the views hold %d keys, the join %d", epoch, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Fatalf("epoch %d: key %d is %v, the join says %v", epoch, k, got[k], w)
			}
		}
	}
	if exchange.ReadStats().BytesSent == sent {
		t.Fatal("no rows crossed the exchange")
	}
}

// distServers starts a Flight exchange server on loopback for each of
// nodes and the connections between them.
func distServers(t *testing.T, nodes []string) (map[string]*exchange.Server, *exchange.Conns) {
	addrs := map[string]string{}
	conns := &exchange.Conns{Addr: func(node string) (string, error) { return addrs[node], nil }}
	t.Cleanup(conns.Close)
	srvs := map[string]*exchange.Server{}
	for _, id := range nodes {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gs := grpc.NewServer()
		srvs[id] = exchange.NewServer()
		srvs[id].Register(gs)
		go func() { _ = gs.Serve(l) }()
		t.Cleanup(gs.Stop)
		addrs[id] = l.Addr().String()
	}
	return srvs, conns
}

// startDistParts starts spec's part on each of nodes, each over its own
// in-memory database and Flight server, placed as placement says.
func startDistParts(t *testing.T, nodes []string, placement DistPart, spec JobSpec) (map[string]*storage.DB, map[string]*Job) {
	srvs, conns := distServers(t, nodes)
	dbs := map[string]*storage.DB{}
	jobs := map[string]*Job{}
	for _, id := range nodes {
		db, err := storage.Open("db", storage.Options{FS: storage.MemFS(), CacheBytes: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[id] = db
		part := placement
		part.Self, part.Server, part.Conn = id, srvs[id], conns.Get
		sp := spec
		sp.Dist = &part
		j, err := StartJob(db, sp)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(j.Stop)
		jobs[id] = j
	}
	return dbs, jobs
}

// distEpoch waits until every part has read its splits' logs to their
// ends, injects barrier epoch into every part and commits each part's
// epoch into its database.
func distEpoch(t *testing.T, nodes []string, dbs map[string]*storage.DB, jobs map[string]*Job, epoch uint64) {
	t.Helper()
	ctx := context.Background()
	for _, id := range nodes {
		j := jobs[id]
		ends := j.LogEnds()
		for deadline := time.Now().Add(time.Minute); !j.Reached(ends); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("node %s did not read its splits: %v", id, j.Err())
			}
		}
	}
	for _, id := range nodes {
		if err := jobs[id].InjectBarrier(ctx, &Barrier{Epoch: epoch}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range nodes {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		b, err := jobs[id].AwaitBarrier(actx, epoch)
		cancel()
		if err != nil {
			t.Fatalf("node %s, epoch %d: %v (job: %v)", id, epoch, err, jobs[id].Err())
		}
		if err := dbs[id].State().CommitEpoch([]*storage.Batch{b}, 0, nil, false); err != nil {
			t.Fatal(err)
		}
		jobs[id].Committed(epoch)
	}
}

// distViewRows reads view (k, and two BIGINT columns) from every node's
// database: the union, each key on one node, every node holding some.
func distViewRows(t *testing.T, nodes []string, dbs map[string]*storage.DB, view *storage.TableDef, epoch uint64) map[int64][2]int64 {
	t.Helper()
	got := map[int64][2]int64{}
	for _, id := range nodes {
		n := 0
		err := batch.Run(&plan.Ctx{Context: context.Background(), DB: dbs[id], Expr: &expr.Ctx{Mem: memory.DefaultAllocator}}, &plan.ScanView{View: view},
			func(rec arrow.RecordBatch) error {
				defer rec.Release()
				k, c, m := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
				for i := 0; i < int(rec.NumRows()); i++ {
					if _, dup := got[k.Value(i)]; dup {
						t.Errorf("key %d is on two nodes", k.Value(i))
					}
					got[k.Value(i)] = [2]int64{c.Value(i), m.Value(i)}
					n++
				}
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("epoch %d: node %s holds no rows of the view", epoch, id)
		}
	}
	return got
}
