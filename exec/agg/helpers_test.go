package agg

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/exec/opkit/opkittest"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// testJob is a view job's state in a Pebble database in memory, as the
// runtime reaches it (exec/opstate.go): per epoch on Pebble, or, once mem
// is set, in the job's state map, which an instance releases once loaded.
type testJob struct {
	db  *storage.DB
	mem bool
}

const testJobID = 1

func valueJob(t testing.TB) *testJob {
	db, err := storage.Open("db", storage.Options{FS: storage.MemFS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &testJob{db: db}
}

// testState is operator op's state in j (opkit.State).
type testState struct {
	j  *testJob
	op uint32
}

func (s testState) Get(k []byte) ([]byte, error) { return s.j.db.State().Get(testJobID, s.op, k) }
func (s testState) Scan(fn func(key, val []byte) error) error {
	return s.j.db.State().Scan(testJobID, s.op, fn)
}
func (s testState) ScanPrefix(p []byte, fn func(key, val []byte) error) error {
	return s.j.db.State().ScanPrefix(testJobID, s.op, p, fn)
}
func (s testState) Loaded() {
	if s.j.mem {
		s.j.db.Memory().Release(testJobID, s.op, func(int) bool { return true })
	}
}
func (s testState) Commit(w *storage.Batch, _ *op.Barrier, _, _ bool, write func(*opkit.Writer) error, _ func(uint64) *opkit.Snapshot) (bool, error) {
	if w == nil {
		return false, nil
	}
	x := opkit.NewWriter(w, testJobID, s.op)
	err := write(x)
	x.Close()
	return true, err
}

// testNode is what a view job gives instance 0 of operator 7 over j's
// state: no budget, no state.ttl, old rows kept and sent.
func testNode(j *testJob) Node {
	nd := opkittest.Node(&opkittest.Outlet{Discard: true}, testState{j, 7})
	nd.ID = 7
	return Node{Node: nd, KeepRows: true, OldRows: func() bool { return true }, PerEpoch: !j.mem}
}

func kvRefs() (k, v *expr.ColRef) {
	return &expr.ColRef{Idx: 0, T: types.TInt64}, &expr.ColRef{Idx: 1, T: types.TInt64}
}

// valueSpec: SELECT k, count(*), count(DISTINCT v), min(v), max(v),
// sum(DISTINCT v) GROUP BY k over (k BIGINT, v BIGINT), whose input
// retracts.
func valueSpec() *Spec {
	k, v := kvRefs()
	return specOf([]expr.Expr{k}, true,
		accum.Spec{Kind: accum.CountStar, T: types.TInt64},
		accum.Spec{Kind: accum.Count, Distinct: true, Arg: v, T: types.TInt64},
		accum.Spec{Kind: accum.Min, Arg: v, T: types.TInt64},
		accum.Spec{Kind: accum.Max, Arg: v, T: types.TInt64},
		accum.Spec{Kind: accum.Sum, Distinct: true, Arg: v, T: types.NumericOf(38, 0)})
}

// specOf is the spec of an aggregate of aggs grouped by keys.
func specOf(keys []expr.Expr, retract bool, aggs ...accum.Spec) *Spec {
	ts := expr.Types(keys)
	for _, a := range aggs {
		ts = append(ts, a.T)
	}
	return &Spec{Keys: keys, Aggs: aggs, OutTs: ts, Retract: retract}
}

// kvRecord makes a batch of (k, v) rows.
func kvRecord(rows [][2]int64) arrow.RecordBatch { return opkittest.KVRecord(rows) }

// pushSigned folds rows in with one sign for all (+1 insert, -1 delete).
func pushSigned(t testing.TB, o *Op, rows [][2]int64, s int8) {
	t.Helper()
	rec := kvRecord(rows)
	defer rec.Release()
	signs := make([]int8, len(rows))
	for i := range signs {
		signs[i] = s
	}
	if err := o.Fold(&expr.Ctx{Mem: opkit.Mem}, rec, signs, true); err != nil {
		t.Fatal(err)
	}
}

// saveEpoch runs an aggregate's barrier in a view job and commits its
// state; it returns the number of state writes.
func saveEpoch(t testing.TB, j *testJob, o *Op, epoch uint64) uint32 {
	t.Helper()
	o.prepareSave(epoch)
	if err := o.changesOf(true, func(c op.Chunk) error { c.Rec.Release(); return nil }); err != nil {
		t.Fatal(err)
	}
	w := j.db.State().NewEpochBatch()
	x := opkit.NewWriter(w, testJobID, o.id)
	if err := o.writeState(x); err != nil {
		t.Fatal(err)
	}
	x.Close()
	n := w.Count()
	if err := j.db.State().CommitEpoch([]*storage.Batch{w}, epoch, nil, false); err != nil {
		t.Fatal(err)
	}
	return n
}

// groupRows renders every live group's row, sorted.
func groupRows(t testing.TB, o *Op) string {
	t.Helper()
	var gids []int32
	for g := range int32(o.gt.Len()) {
		if o.live[g] && o.count.N(g) > 0 {
			gids = append(gids, g)
		}
	}
	rec, err := o.build(gids)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	var out []string
	for i := range int(rec.NumRows()) {
		var vals []string
		for c, ty := range o.outTs {
			vals = append(vals, types.TextOf(types.DatumAt(rec.Column(c), i, ty), ty))
		}
		out = append(out, strings.Join(vals, " "))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// restoredOp is instance 0 of valueSpec's aggregate, operator 7 of j,
// loaded from j's state.
func restoredOp(t testing.TB, j *testJob) *Op {
	t.Helper()
	o := New(valueSpec(), testNode(j))
	if err := o.Load(testState{j, 7}, 0, 1, false); err != nil {
		t.Fatal(err)
	}
	return o
}

// stateOf lists operator op's entries in j's state table as "key=value" in hex.
func stateOf(t *testing.T, j *testJob, op uint32) []string {
	t.Helper()
	var out []string
	if err := j.db.State().Scan(testJobID, op, func(k, v []byte) error {
		out = append(out, fmt.Sprintf("%x=%x", k, v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
