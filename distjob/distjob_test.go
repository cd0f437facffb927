package distjob_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamdb/streamdb/exec/disttest"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/cluster"
	"github.com/streamdb/streamdb/cluster/etcdtest"
	"github.com/streamdb/streamdb/distjob"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/exchange"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
	"google.golang.org/grpc"
)

// The view: SELECT k, count(*), max(v) FROM t WHERE v >= -3 GROUP BY k,
// t a stream of six partitions; every node's log holds every partition's
// rows (as a shared source would), each node reads only its splits.
const (
	splits    = 6
	instances = 3
)

var (
	src = &storage.TableDef{ID: 1, Name: "t", Kind: storage.KindStream, Partitions: splits,
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "v", Type: types.TInt64}}}
	view = &storage.TableDef{ID: 2, Name: "v", Kind: storage.KindView, KeyCols: []int{0},
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64}, {Name: "n", Type: types.TInt64}, {Name: "m", Type: types.TInt64}}}
)

func col(i int) *expr.ColRef { return &expr.ColRef{Idx: i, T: types.TInt64} }

func viewPlan() plan.Plan {
	f := &plan.Filter{In: &plan.ScanStream{Table: src}, Pred: &expr.Func{Name: ">=", Args: []expr.Expr{col(1),
		&expr.Const{D: types.Int(-3), T: types.TInt64}}, T: types.TBool}}
	return &plan.HashAgg{In: f, Keys: []expr.Expr{col(0)},
		Aggs: []plan.AggSpec{{Kind: plan.AggCountStar, T: types.TInt64}, {Kind: plan.AggMax, Arg: col(1), T: types.TInt64}}}
}

type node struct {
	id   string
	cn   *cluster.Node
	db   *storage.DB
	part *distjob.Part
	gs   *grpc.Server
	peer *httptest.Server // its peer listener's part endpoint
	stop context.CancelFunc
	done chan struct{}
}

type testCluster struct {
	t     *testing.T
	ep    string
	mu    sync.Mutex
	addrs map[string]string
	peers map[string]string // node -> its part endpoint's host:port
	conns *exchange.Conns
	nodes map[string]*node
	rows  []int // rows appended per split
}

func (c *testCluster) start(id string) *node {
	t := c.t
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	srv := exchange.NewServer()
	srv.Register(gs)
	go func() { _ = gs.Serve(l) }()
	c.mu.Lock()
	c.addrs[id] = l.Addr().String()
	c.mu.Unlock()
	db, err := storage.Open("db", storage.Options{FS: storage.MemFS(), CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for s, n := range c.rows { // the shared source's rows so far
		appendRows(t, db, s, 0, n)
	}
	job := cluster.DistJob{View: "v", Instances: instances, Splits: map[string]int{"t": splits}}
	cn, err := cluster.Join(context.Background(), cluster.Config{Endpoints: []string{c.ep}, Cluster: "dj", NodeID: id,
		PeerAddr: l.Addr().String(), LeaseTTL: 5 * time.Second,
		Apply:       func(context.Context, cluster.Entry) (any, error) { return nil, nil },
		Distributed: func() []cluster.DistJob { return []cluster.DistJob{job} }, DataflowRound: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{id: id, cn: cn, db: db, gs: gs, stop: cancel, done: make(chan struct{})}
	n.part = &distjob.Part{Node: cn, Self: id, View: "v", Sources: []distjob.Source{{Name: "t"}}, DB: db, Server: srv, Conn: c.conns.Get,
		Spec: exec.JobSpec{ID: view.ID, Name: "v", Plan: viewPlan(), View: view}}
	go func() { defer close(n.done); n.part.Run(ctx) }()
	// Before the database closes (cleanups run last first): the part may
	// be restoring into it when the test ends.
	t.Cleanup(func() { cancel(); <-n.done })
	n.peer = httptest.NewServer(distjob.Handler(func(v string) *distjob.Part {
		if v == "v" {
			return n.part
		}
		return nil
	}))
	c.mu.Lock()
	c.peers[id] = strings.TrimPrefix(n.peer.URL, "http://")
	c.mu.Unlock()
	c.nodes[id] = n
	return n
}

// kill ends a node as kill -9 would for its peers: its streams break and
// its lease goes.
func (c *testCluster) kill(id string) {
	n := c.nodes[id]
	n.stop()
	n.gs.Stop()
	n.peer.CloseClientConnections()
	n.peer.Close()
	<-n.done
	_ = n.cn.Close()
	delete(c.nodes, id)
}

func appendRows(t *testing.T, db *storage.DB, s, from, to int) {
	if to <= from {
		return
	}
	kb, vb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	for i := from; i < to; i++ {
		k, v := disttest.Row(s, i)
		kb.Append(k)
		vb.Append(v)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{kb.NewArray(), vb.NewArray()}, int64(to-from))
	defer rec.Release()
	if _, err := db.Log().Append(src.ID, uint32(s), []arrow.RecordBatch{rec}); err != nil {
		t.Fatal(err)
	}
}

// add appends n more rows to every split, on every node.
func (c *testCluster) add(n int) {
	for s := range c.rows {
		for _, nd := range c.nodes {
			appendRows(c.t, nd.db, s, c.rows[s], c.rows[s]+n+s)
		}
		c.rows[s] += n + s
	}
}

// read gathers the view on node via from at the committed cluster epoch:
// k -> (count, max).
func (c *testCluster) read(via *node) (map[int64][2]int64, cluster.Epoch, error) {
	got := map[int64][2]int64{}
	var dup error
	e, err := distjob.Gather(context.Background(), via.cn, "v", func(id string, gen, epoch uint64) error {
		c.mu.Lock()
		peer := c.peers[id]
		c.mu.Unlock()
		// Over the node's peer listener, as a read on another node does.
		return distjob.Fetch(context.Background(), http.DefaultClient, peer, "v", gen, epoch, func(rec arrow.RecordBatch) error {
			defer rec.Release()
			k, cnt, m := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
			for i := 0; i < int(rec.NumRows()); i++ {
				if _, ok := got[k.Value(i)]; ok {
					dup = errDup
				}
				got[k.Value(i)] = [2]int64{cnt.Value(i), m.Value(i)}
			}
			return nil
		})
	}, func() { clear(got) })
	if err == nil {
		err = dup
	}
	return got, e, err
}

var errDup = &dupErr{}

type dupErr struct{}

func (*dupErr) Error() string { return "a key is on two nodes" }

func (c *testCluster) batchQuery() map[int64][2]int64 { return disttest.Want(c.rows) }

// refused counts the reads refused with 55000 while a generation had
// committed nothing.
var refused int

// settle waits until a read on every node equals the batch query; a read
// that fails must be refused with 55000.
func (c *testCluster) settle(what string) {
	t := c.t
	want := c.batchQuery()
	deadline := time.Now().Add(60 * time.Second)
	for _, via := range c.nodes {
		var last cluster.Epoch
		for {
			got, e, err := c.read(via)
			if err != nil && sqlerr.Code(err) != sqlerr.ObjectNotInPrereqState {
				t.Fatalf("%s: a read on %s failed with %v (SQLSTATE %s), not 55000", what, via.id, err, sqlerr.Code(err))
			}
			refused += min(1, len(sqlerr.Code(err)))
			if err == nil && e.Epoch < last.Epoch {
				t.Fatalf("%s: a read on %s went back from epoch %v to %v", what, via.id, last, e)
			}
			if err == nil && equal(got, want) {
				break
			}
			if err == nil {
				last = e
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the view read on %s (err %v, epoch %v) has %d keys, the batch query %d", what, via.id, err, e, len(got), len(want))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func equal(a, b map[int64][2]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// TestDistributedViewParts: three nodes each run their part of the view's
// job (distjob.Part over exec.JobSpec.Dist), with rounds, acks and the
// committed epoch of cluster/dataflow.go; a read gathered on any node at
// the committed cluster epoch equals the batch query, each key on one
// node. A node killed mid-stream: the two survivors roll the job back to
// the start (a new generation), reads are refused (55000) until its first
// epoch commits, and the view ends exactly right again; so it does after a
// fourth node joins and gets its share.
func TestDistributedViewParts(t *testing.T) {
	c := &testCluster{t: t, ep: etcdtest.Start(t), addrs: map[string]string{}, peers: map[string]string{}, nodes: map[string]*node{}, rows: make([]int, splits)}
	c.conns = &exchange.Conns{Addr: func(id string) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.addrs[id], nil
	}}
	t.Cleanup(c.conns.Close)
	c.add(300)
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id)
	}
	t.Cleanup(func() {
		for id := range c.nodes {
			c.kill(id)
		}
	})
	c.settle("three nodes")
	// Every node holds part of the view.
	for id, n := range c.nodes {
		rows := 0
		if err := n.db.Views().Scan(n.db.Reader(), view.ID, func(_, _ []byte) error { rows++; return nil }); err != nil {
			t.Fatal(err)
		}
		if rows == 0 {
			t.Fatalf("node %s holds no rows of the view", id)
		}
	}
	c.add(500)
	c.settle("more rows")
	if exchange.ReadStats().BytesSent == 0 {
		t.Fatal("no rows crossed the exchange")
	}
	// kill -9 of one node while rows arrive.
	c.add(400)
	c.kill("n2")
	c.add(300)
	c.settle("after n2 was lost")
	d, err := c.nodes["n1"].cn.ReadDataflow(context.Background(), "v")
	if err != nil {
		t.Fatal(err)
	}
	if d.Placement.Gen < 2 || len(d.Placement.Nodes()) != 2 {
		t.Fatalf("after the loss of n2 the placement is %+v", d.Placement)
	}
	// A node that joins gets its share at a new generation (2 -> 3).
	c.start("n4")
	c.add(200)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d, err = c.nodes["n1"].cn.ReadDataflow(context.Background(), "v")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Placement.InstancesOf("n4")) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n4 joined but the placement is %+v", d.Placement)
		}
	}
	c.settle("after n4 joined")
	// An epoch a node does not keep, or a view it runs no part of.
	for _, v := range []string{"v", "nope"} {
		err := distjob.Fetch(context.Background(), http.DefaultClient, c.peers["n1"], v, 999, 1, func(arrow.RecordBatch) error { return nil })
		if !errors.Is(err, distjob.ErrEpochGone) {
			t.Fatalf("reading %s at generation 999 on n1: %v, want ErrEpochGone", v, err)
		}
	}
}
