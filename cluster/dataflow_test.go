package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/cluster/etcdtest"
	"github.com/streamdb/streamdb/exec/exchange"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/objstore"
	"github.com/streamdb/streamdb/types"
	"google.golang.org/grpc"
)

// The distributed GROUP BY of TestDistributedGroupBy: SELECT k, count(*),
// sum(v) FROM src GROUP BY k, src with dfSplits splits (dfStore.rows rows each).
const (
	dfSplits    = 6
	dfInstances = 3
	dfKeys      = 97
)

var dfTypes = []types.T{types.TInt64, types.TInt64}

// dfRow is row i of split s: (k, v).
func dfRow(s, i int) (int64, int64) {
	return int64((s*7919 + i*31 + i/7) % dfKeys), int64(i%13) - 6
}

type dfAcc struct{ n, sum int64 }

// dfBatchQuery is the GROUP BY over the first upTo[s] rows of each split.
func dfBatchQuery(upTo []int) map[int64]dfAcc {
	out := map[int64]dfAcc{}
	for s, n := range upTo {
		for i := range n {
			k, v := dfRow(s, i)
			a := out[k]
			a.n++
			a.sum += v
			out[k] = a
		}
	}
	return out
}

// dfStore is the checkpoint storage every node writes its parts to and
// restores them from, an S3 bucket (gofakes3) as --cluster-storage is: each
// aggregate instance's state and each split's position, per epoch (epochs
// are unique across generations, so an epoch names one object per part);
// and the run's shape.
type dfStore struct {
	rows     int           // rows per split
	batch    int           // rows per batch
	perEpoch int           // the most rows a split reads per epoch (0: no limit)
	round    time.Duration // how often the coordinator asks for a round
	s3       objstore.Store
}

func newDFStore(t *testing.T, rows, batch, perEpoch int, round time.Duration) *dfStore {
	be := s3mem.New()
	if err := be.CreateBucket("ckpt"); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(ts.Close)
	l, err := objstore.Parse("s3://ckpt/cluster")
	if err != nil {
		t.Fatal(err)
	}
	s3, err := objstore.Open(l, objstore.S3Config{Endpoint: ts.URL, Region: "us-east-1", AccessKey: "k", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	return &dfStore{rows: rows, batch: batch, perEpoch: perEpoch, round: round, s3: s3}
}

func (st *dfStore) put(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return st.s3.Put(context.Background(), key, bytes.NewReader(b), int64(len(b)))
}

// get reads key into v; ok is false if there is no such object.
func (st *dfStore) get(key string, v any) (bool, error) {
	r, err := st.s3.Get(context.Background(), key)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer r.Close()
	return true, json.NewDecoder(r).Decode(v)
}

func aggKey(inst int, epoch uint64) string {
	return fmt.Sprintf("v/epoch-%020d/instance-%d", epoch, inst)
}
func offKey(split int, epoch uint64) string {
	return fmt.Sprintf("v/epoch-%020d/split-%d", epoch, split)
}

func (st *dfStore) putAgg(inst int, epoch uint64, state map[int64]dfAcc) error {
	rows := make([][3]int64, 0, len(state))
	for k, v := range state {
		rows = append(rows, [3]int64{k, v.n, v.sum})
	}
	return st.put(aggKey(inst, epoch), rows)
}

// getAgg is instance inst's state at epoch (empty at epoch 0); an error
// if there is none.
func (st *dfStore) getAgg(inst int, epoch uint64) (map[int64]dfAcc, error) {
	out := map[int64]dfAcc{}
	if epoch == 0 {
		return out, nil
	}
	var rows [][3]int64
	ok, err := st.get(aggKey(inst, epoch), &rows)
	if err == nil && !ok {
		err = fmt.Errorf("instance %d has no state at epoch %d", inst, epoch)
	}
	for _, r := range rows {
		out[r[0]] = dfAcc{n: r[1], sum: r[2]}
	}
	return out, err
}

func (st *dfStore) putOff(split int, epoch uint64, off int) error {
	return st.put(offKey(split, epoch), off)
}

// getOff is split's position at epoch (0 at epoch 0); an error if there
// is none.
func (st *dfStore) getOff(split int, epoch uint64) (int, error) {
	if epoch == 0 {
		return 0, nil
	}
	var off int
	ok, err := st.get(offKey(split, epoch), &off)
	if err == nil && !ok {
		err = fmt.Errorf("split %d has no position at epoch %d", split, epoch)
	}
	return off, err
}

// dfNode is one node: its cluster membership, its exchange server on its
// peer listener, and the part of the view's job it runs.
type dfNode struct {
	id   string
	node *cluster.Node
	srv  *exchange.Server
	gs   *grpc.Server
	stop context.CancelFunc
	done chan struct{}
	// failOnce makes one of the node's splits fail (a stream broken by
	// anything but a node's death).
	failOnce atomic.Bool
}

// dfCreated gates the view: none until the three nodes joined (a placement
// does not move parts to a node that joins later).
var dfCreated atomic.Bool

func startDFNode(t *testing.T, ep, id string, st *dfStore) *dfNode {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	srv := exchange.NewServer()
	srv.Register(gs)
	go func() { _ = gs.Serve(l) }()
	job := cluster.DistJob{View: "v", Instances: dfInstances, Splits: map[string]int{"src": dfSplits}}
	n, err := cluster.Join(context.Background(), cluster.Config{Endpoints: []string{ep}, Cluster: "df", NodeID: id,
		PeerAddr: l.Addr().String(), LeaseTTL: 5 * time.Second, Apply: (&catalog{}).apply,
		Distributed: func() []cluster.DistJob {
			if !dfCreated.Load() {
				return nil
			}
			return []cluster.DistJob{job}
		}, DataflowRound: st.round})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dn := &dfNode{id: id, node: n, srv: srv, gs: gs, stop: cancel, done: make(chan struct{})}
	go dn.drive(ctx, st)
	return dn
}

// kill ends the node as kill -9 would for its peers: its streams break
// mid-epoch and it leaves the membership (here by revoking its lease at
// once; a lease that expires takes the same path, TTL later).
func (dn *dfNode) kill() {
	dn.stop()
	dn.gs.Stop()
	<-dn.done
	_ = dn.node.Close()
}

// part is this node's part of one generation of the job.
type part struct {
	gen    uint64
	target atomic.Uint64 // the last round asked for
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// drive follows the job's state in etcd: on a new placement it stops its
// part and starts the new generation's from the committed cluster epoch
// (global rollback); on a new round it has its sources inject it.
func (dn *dfNode) drive(ctx context.Context, st *dfStore) {
	defer close(dn.done)
	var cur *part
	stopPart := func() {
		if cur != nil {
			cur.cancel()
			<-cur.done
			cur = nil
		}
	}
	defer stopPart()
	for d := range dn.node.WatchDataflow(ctx, "v") {
		p := d.Placement
		if p == nil {
			continue
		}
		if cur != nil && cur.gen != p.Gen {
			stopPart()
		}
		if cur == nil {
			cur = &part{gen: p.Gen, done: make(chan struct{})}
			cur.target.Store(d.Committed.Epoch)
			pctx, cancel := context.WithCancel(ctx)
			cur.cancel = cancel
			go func(pt *part, committed uint64) {
				defer close(pt.done)
				pt.err = dn.runPart(pctx, pt, p, committed, st)
				if pctx.Err() == nil { // failed while its generation stands
					_ = dn.node.RequestRollback(ctx, "v", pt.gen)
				}
			}(cur, d.Committed.Epoch)
		}
		if d.Round.Gen == cur.gen && d.Round.Epoch > cur.target.Load() {
			cur.target.Store(d.Round.Epoch)
		}
	}
}

// runPart runs this node's source splits and aggregate instances of
// placement p, restored at epoch committed, until ctx ends or a stream
// breaks.
func (dn *dfNode) runPart(ctx context.Context, pt *part, p *cluster.Placement, committed uint64, st *dfStore) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	job := fmt.Sprintf("v.%d", p.Gen)
	insts, splits := p.InstancesOf(dn.id), p.SplitsOf(dn.id)["src"]
	// Each epoch is durable here once every local instance and split has
	// written its part; the node then acknowledges it.
	var mu sync.Mutex
	parts := map[uint64]int{}
	durable := func(e uint64) error {
		mu.Lock()
		parts[e]++
		all := parts[e] == len(insts)+len(splits)
		mu.Unlock()
		if !all {
			return nil
		}
		err := dn.node.AckEpoch(ctx, "v", p, e)
		if errors.Is(err, cluster.ErrStalePlacement) {
			return nil // the next placement rolls this part back
		}
		return err
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(insts)+len(splits))
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && ctx.Err() == nil {
				errc <- err
				cancel()
			}
		}()
	}
	for _, a := range insts {
		in, err := dn.srv.Open(job, 0, a, dfSplits, 0)
		if err != nil {
			return err
		}
		defer in.Close()
		state, err := st.getAgg(a, committed)
		if err != nil {
			return err
		}
		run(func() error {
			for {
				it, err := in.Next(ctx)
				if err != nil {
					return err
				}
				if it.Barrier != nil {
					if err := st.putAgg(a, it.Barrier.Epoch, state); err != nil {
						return err
					}
					if err := durable(it.Barrier.Epoch); err != nil {
						return err
					}
					continue
				}
				k := it.Chunk.Rec.Column(0).(*array.Int64).Int64Values()
				v := it.Chunk.Rec.Column(1).(*array.Int64).Int64Values()
				for r := range k {
					x := state[k[r]]
					x.n++
					x.sum += v[r]
					state[k[r]] = x
				}
				it.Chunk.Rec.Release()
			}
		})
	}
	conns := map[string]*grpc.ClientConn{}
	defer func() {
		for _, cc := range conns {
			_ = cc.Close()
		}
	}()
	for _, s := range splits {
		off, err := st.getOff(s, committed)
		if err != nil {
			return err
		}
		var ss []*exchange.Sender
		for a, id := range p.Instances {
			cc := conns[id]
			if cc == nil {
				addr, err := dn.node.PeerAddr(ctx, id)
				if err != nil {
					return err
				}
				if cc, err = exchange.Conn(addr); err != nil {
					return err
				}
				conns[id] = cc
			}
			snd, err := exchange.Dial(ctx, cc, exchange.StreamID{Job: job, Edge: 0, Sender: s, Receiver: a}, opkit.SchemaFor(dfTypes))
			if err != nil {
				return err
			}
			ss = append(ss, snd)
		}
		o := exchange.NewOutlet(ctx, ss, []int{0}, dfTypes)
		run(func() error {
			last, read := committed, 0
			for ctx.Err() == nil {
				if dn.failOnce.CompareAndSwap(true, false) {
					return fmt.Errorf("split %d: injected failure", s)
				}
				if e := pt.target.Load(); e > last {
					if err := st.putOff(s, e, off); err != nil {
						return err
					}
					if err := o.Barrier(&op.Barrier{Epoch: e, Checkpoint: true}, op.Watermark{At: op.NoWatermark}); err != nil {
						return err
					}
					last, read = e, 0
					if err := durable(e); err != nil {
						return err
					}
				}
				if off == st.rows || st.perEpoch > 0 && read >= st.perEpoch {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				end := min(off+st.batch, st.rows)
				if err := o.Emit(nil, op.Chunk{Rec: dfRecord(s, off, end)}); err != nil {
					return err
				}
				read += end - off
				off = end
			}
			return ctx.Err()
		})
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return ctx.Err()
	}
}

func dfRecord(s, from, to int) arrow.RecordBatch {
	b0 := array.NewInt64Builder(memory.DefaultAllocator)
	b1 := array.NewInt64Builder(memory.DefaultAllocator)
	for i := from; i < to; i++ {
		k, v := dfRow(s, i)
		b0.Append(k)
		b1.Append(v)
	}
	a0, a1 := b0.NewArray(), b1.NewArray()
	return opkit.NewRecord(dfTypes, []arrow.Array{a0, a1}, to-from)
}

// dfRead is a read of the view on node n: the committed cluster epoch,
// then every instance's rows at that epoch (wherever it ran), and the
// batch query over each split up to its position at that epoch.
func dfRead(t *testing.T, n *cluster.Node, st *dfStore) (epoch uint64, got, want map[int64]dfAcc, rows int) {
	t.Helper()
	d, err := n.ReadDataflow(context.Background(), "v")
	if err != nil {
		t.Fatal(err)
	}
	epoch = d.Committed.Epoch
	got = map[int64]dfAcc{}
	for a := range dfInstances {
		s, err := st.getAgg(a, epoch)
		if err != nil {
			t.Fatalf("committed epoch %d: %v", epoch, err)
		}
		for k, v := range s {
			if _, dup := got[k]; dup {
				t.Fatalf("committed epoch %d: key %d in two instances", epoch, k)
			}
			got[k] = v
		}
	}
	upTo := make([]int, dfSplits)
	for s := range upTo {
		o, err := st.getOff(s, epoch)
		if err != nil {
			t.Fatalf("committed epoch %d: %v", epoch, err)
		}
		upTo[s] = o
		rows += o
	}
	return epoch, got, dfBatchQuery(upTo), rows
}

func equalAcc(a, b map[int64]dfAcc) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestDistributedGroupBy runs one GROUP BY view's job on three nodes
// through the cluster's etcd and the Flight exchange: the coordinator
// places the six source splits and three aggregate instances on the three
// nodes, every split shuffles its rows by key group to the aggregate
// instance owning it, the coordinator asks for a barrier round every
// 40 ms, each node acknowledges the epochs its part made durable and the
// coordinator commits the cluster epoch every node acknowledged. A read on
// any node, at the committed cluster epoch, equals the batch query over
// the rows the splits had read at that epoch, and never goes backwards.
// Midway one node is killed (a follower; then, in a second run, the
// coordinator): its streams break, the coordinator (the new one) places its
// parts on the survivors (a new generation) and every node restarts its
// part from the last committed cluster epoch; the view ends with every
// row counted exactly once. In a third run no node dies but one node's
// part fails: it asks for a rollback, and the next generation runs on the
// same three nodes from the committed epoch. In a fourth the job starts on
// two nodes, a third joins and gets its share (a new generation), then is
// killed (2 -> 3 -> 2).
func TestDistributedGroupBy(t *testing.T) {
	t.Run("follower", func(t *testing.T) { runDistributedGroupBy(t, "follower") })
	t.Run("coordinator", func(t *testing.T) { runDistributedGroupBy(t, "coordinator") })
	t.Run("part-failure", func(t *testing.T) { runDistributedGroupBy(t, "part-failure") })
	t.Run("scale", func(t *testing.T) { runDistributedGroupBy(t, "scale") })
}

func runDistributedGroupBy(t *testing.T, failure string) {
	killCoordinator := failure == "coordinator"
	ep := etcdtest.Start(t)
	st := newDFStore(t, 3000, 25, 100, 40*time.Millisecond)
	var nodes []*dfNode
	ids := []string{"n1", "n2", "n3"}
	if failure == "scale" {
		ids = ids[:2] // n3 joins later
	}
	for _, id := range ids {
		nodes = append(nodes, startDFNode(t, ep, id, st))
	}
	dfCreated.Store(true)
	defer dfCreated.Store(false)
	killed := map[string]bool{}
	defer func() {
		for _, n := range nodes {
			if !killed[n.id] {
				n.kill()
			}
		}
	}()
	last := map[string]int{} // rows read at the last read, per reading node
	check := func() (uint64, int) {
		var epoch uint64
		var rows int
		for _, n := range nodes {
			if killed[n.id] {
				continue
			}
			e, got, want, r := dfRead(t, n.node, st)
			if !equalAcc(got, want) {
				t.Fatalf("read on %s at cluster epoch %d: %d groups, the batch query %d (or values differ)", n.id, e, len(got), len(want))
			}
			if r < last[n.id] {
				t.Fatalf("read on %s went backwards: %d rows, %d before", n.id, r, last[n.id])
			}
			last[n.id] = r
			epoch, rows = e, r
		}
		return epoch, rows
	}
	deadline := time.Now().Add(60 * time.Second)
	// Until a few epochs committed with all the nodes placed.
	for {
		if time.Now().After(deadline) {
			t.Fatal("no cluster epoch committed")
		}
		e, rows := check()
		d, err := nodes[0].node.ReadDataflow(context.Background(), "v")
		if err != nil {
			t.Fatal(err)
		}
		if e >= 3 && rows > 0 {
			if p := d.Placement; len(p.Nodes()) != len(nodes) {
				t.Fatalf("placement gen %d uses %v, want all %d nodes", p.Gen, p.Nodes(), len(nodes))
			}
			break
		}
		if rows == dfSplits*st.rows {
			t.Fatalf("the whole input was read before three epochs committed (epoch %d)", e)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d0, _ := nodes[1].node.ReadDataflow(context.Background(), "v")
	if failure == "scale" { // 2 -> 3: n3 gets its share at a new generation
		nodes = append(nodes, startDFNode(t, ep, "n3", st))
		for {
			if time.Now().After(deadline) {
				t.Fatal("the joined node got no share")
			}
			check()
			d, err := nodes[0].node.ReadDataflow(context.Background(), "v")
			if err != nil {
				t.Fatal(err)
			}
			if d.Placement.Gen > d0.Placement.Gen && len(d.Placement.Nodes()) == 3 && d.Committed.Gen == d.Placement.Gen {
				t.Logf("n3 joined: gen %d on %v, committed epoch %d", d.Placement.Gen, d.Placement.Nodes(), d.Committed.Epoch)
				d0 = d
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	victim := nodes[2]
	for _, n := range nodes {
		if failure != "scale" && n.node.IsCoordinator() == killCoordinator {
			victim = n
		}
	}
	if victim.node.IsCoordinator() != killCoordinator {
		t.Fatalf("no node to kill with coordinator = %v", killCoordinator)
	}
	t.Logf("%s: %s (coordinator: %v) at committed epoch %d (gen %d, its parts: instances %v, splits %v)", failure, victim.id, victim.node.IsCoordinator(), d0.Committed.Epoch,
		d0.Placement.Gen, d0.Placement.InstancesOf(victim.id), d0.Placement.SplitsOf(victim.id))
	if failure == "part-failure" {
		victim.failOnce.Store(true)
	} else {
		victim.kill()
		killed[victim.id] = true
	}
	for {
		if time.Now().After(deadline) {
			t.Fatal("the view did not finish after the node was killed")
		}
		_, rows := check()
		if rows == dfSplits*st.rows {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var survivor *dfNode
	for _, n := range nodes {
		if !killed[n.id] {
			survivor = n
		}
	}
	d, err := survivor.node.ReadDataflow(context.Background(), "v")
	if err != nil {
		t.Fatal(err)
	}
	if d.Placement.Gen <= d0.Placement.Gen || len(d.Placement.Nodes()) != 3-len(killed) || d.Committed.Gen != d.Placement.Gen {
		t.Fatalf("after the kill: placement gen %d on %v, committed %+v; before: gen %d", d.Placement.Gen, d.Placement.Nodes(), d.Committed, d0.Placement.Gen)
	}
	t.Logf("finished at cluster epoch %d, gen %d on %v", d.Committed.Epoch, d.Placement.Gen, d.Placement.Nodes())
}

// TestDistributedGroupByCost measures the distributed GROUP BY of
// TestDistributedGroupBy unpaced, on one node and on three (all in this
// process): CPU-seconds per event (the process's user + system time, so
// every node, etcd and the exchange together) and exchange bytes per
// event. Set STREAMDB_BENCH_DATAFLOW=1 to run it; the numbers are in
// docs/benchmarks/2026-12-07-cluster-dataflow.md.
func TestDistributedGroupByCost(t *testing.T) {
	if os.Getenv("STREAMDB_BENCH_DATAFLOW") == "" {
		t.Skip("set STREAMDB_BENCH_DATAFLOW=1 to measure")
	}
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			ep := etcdtest.Start(t)
			st := newDFStore(t, 200_000, 1024, 0, 100*time.Millisecond)
			var nodes []*dfNode
			for i := range n {
				nodes = append(nodes, startDFNode(t, ep, fmt.Sprintf("n%d", i+1), st))
			}
			defer func() {
				for _, dn := range nodes {
					dn.kill()
				}
			}()
			before, x0, wall := cpuTime(t), exchange.ReadStats(), time.Now()
			dfCreated.Store(true)
			defer dfCreated.Store(false)
			for {
				d, err := nodes[0].node.ReadDataflow(context.Background(), "v")
				if err != nil {
					t.Fatal(err)
				}
				all := d.Committed.Epoch > 0
				for s := range dfSplits {
					o, err := st.getOff(s, d.Committed.Epoch)
					if err != nil {
						t.Fatal(err)
					}
					all = all && o == st.rows
				}
				if all {
					break
				}
				if time.Since(wall) > 5*time.Minute {
					t.Fatal("not done in 5 minutes")
				}
				time.Sleep(50 * time.Millisecond)
			}
			cpu, x1, events := cpuTime(t)-before, exchange.ReadStats(), float64(dfSplits*st.rows)
			if _, got, want, _ := dfRead(t, nodes[0].node, st); !equalAcc(got, want) {
				t.Fatal("the view differs from the batch query")
			}
			t.Logf("nodes=%d events=%.0f wall=%s cpu=%s cpu/event=%.3gµs exchange bytes/event=%.1f backpressure=%s",
				n, events, time.Since(wall).Round(time.Millisecond), cpu.Round(time.Millisecond),
				cpu.Seconds()/events*1e6, float64(x1.BytesSent-x0.BytesSent)/events, x1.Backpressure-x0.Backpressure)
		})
	}
}

// cpuTime is this process's user + system CPU time.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
