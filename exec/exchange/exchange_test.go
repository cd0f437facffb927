package exchange

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/accum"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
	"google.golang.org/grpc"
)

var ts2 = []types.T{types.TInt64, types.TInt64}

// node is one test "node": an exchange server on a loopback listener
// behind the same HTTP/1 + h2c handler the peer listener uses.
type node struct {
	srv  *Server
	addr string
	cc   *grpc.ClientConn
}

func startNode(t testing.TB) *node {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	srv := NewServer()
	srv.Register(gs)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /peer/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	hs := &http.Server{Handler: Handler(gs, mux), Protocols: Protocols(), HTTP2: HTTP2()}
	go func() { _ = hs.Serve(l) }()
	cc, err := Conn(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cc.Close()
		gs.Stop()
		_ = hs.Close()
	})
	return &node{srv: srv, addr: l.Addr().String(), cc: cc}
}

// batch makes a record of rows (k, v) for k in keys, v = base+i.
func batch(keys []int64, base int64) arrow.RecordBatch {
	vs := make([]int64, len(keys))
	for i := range vs {
		vs[i] = base + int64(i)
	}
	return kvBatch(keys, vs)
}

// kvBatch makes a record of rows (ks[i], vs[i]).
func kvBatch(ks, vs []int64) arrow.RecordBatch {
	b0 := array.NewInt64Builder(memory.DefaultAllocator)
	b1 := array.NewInt64Builder(memory.DefaultAllocator)
	b0.AppendValues(ks, nil)
	b1.AppendValues(vs, nil)
	a0, a1 := b0.NewArray(), b1.NewArray()
	return opkit.NewRecord(ts2, []arrow.Array{a0, a1}, len(ks))
}

func schemaKV() *arrow.Schema { return opkit.SchemaFor(ts2) }

func col(rec arrow.RecordBatch, c int) []int64 {
	return append([]int64(nil), rec.Column(c).(*array.Int64).Int64Values()...)
}

// openInbox opens an inbox on n, closed when the test ends.
func openInbox(t testing.TB, n *node, job string, edge, receiver, senders, window int) *Inbox {
	t.Helper()
	in, err := n.srv.Open(job, edge, receiver, senders, window)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Close)
	return in
}

func dial(t *testing.T, n *node, id StreamID) *Sender {
	t.Helper()
	s, err := Dial(context.Background(), n.cc, id, schemaKV())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOrderingAndMetadata: one stream keeps its batches, ops, key groups,
// barriers (with watermark and cut) in order, and ends with io.EOF.
func TestOrderingAndMetadata(t *testing.T) {
	n := startNode(t)
	in := openInbox(t, n, "j", 0, 0, 1, 4)
	s := dial(t, n, StreamID{"j", 0, 0, 0})
	const rounds = 50
	go func() {
		ctx := context.Background()
		for e := range uint64(rounds) {
			c := op.Chunk{Rec: batch([]int64{int64(e), int64(e) + 1}, int64(e)*10),
				Ops: []types.ChangeOp{types.ChangeInsert, types.ChangeDelete}, Groups: []uint8{3, 7}}
			if err := s.Send(ctx, c); err != nil {
				t.Error(err)
				return
			}
			b := &op.Barrier{Epoch: e + 1, Checkpoint: e%2 == 0, Cut: storage.Cut{{Table: 9, Part: 1}: e * 3}}
			if err := s.Barrier(ctx, b, op.Watermark{At: int64(e) * 100}); err != nil {
				t.Error(err)
				return
			}
		}
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	for e := range uint64(rounds) {
		it, err := in.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if it.Chunk.Rec == nil {
			t.Fatalf("epoch %d: want a chunk, got %+v", e, it)
		}
		if k, v := col(it.Chunk.Rec, 0), col(it.Chunk.Rec, 1); k[0] != int64(e) || k[1] != int64(e)+1 || v[0] != int64(e)*10 || v[1] != int64(e)*10+1 {
			t.Fatalf("epoch %d: rows %v %v", e, k, v)
		}
		if it.Chunk.Ops[1] != types.ChangeDelete || it.Chunk.Groups[1] != 7 {
			t.Fatalf("epoch %d: ops %v groups %v", e, it.Chunk.Ops, it.Chunk.Groups)
		}
		it.Chunk.Rec.Release()
		it, err = in.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if it.Barrier == nil || it.Barrier.Epoch != e+1 || it.Barrier.Checkpoint != (e%2 == 0) || it.WM.At != int64(e)*100 ||
			it.Barrier.Cut[storage.LogPart{Table: 9, Part: 1}] != e*3 {
			t.Fatalf("epoch %d: want its barrier, got %+v", e, it)
		}
	}
	if _, err := in.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("after the end: %v, want io.EOF", err)
	}
}

// TestAlignment: a sender whose barrier arrived is not read again until
// every sender's has; the aligned barrier carries the least watermark and
// the union of the cuts.
func TestAlignment(t *testing.T) {
	n := startNode(t)
	const senders = 3
	in := openInbox(t, n, "j", 1, 0, senders, 4)
	ss := make([]*Sender, senders)
	for i := range ss {
		ss[i] = dial(t, n, StreamID{"j", 1, i, 0})
	}
	ctx := context.Background()
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Sender 0 sends its barrier at once and then its epoch-2 rows;
			// the others send theirs only once released.
			if i != 0 {
				<-release
			}
			must := func(err error) {
				if err != nil {
					t.Error(err)
				}
			}
			must(s.Send(ctx, op.Chunk{Rec: batch([]int64{int64(i)}, 1)}))
			must(s.Barrier(ctx, &op.Barrier{Epoch: 1, Cut: storage.Cut{{Table: 1, Part: uint32(i)}: 5}}, op.Watermark{At: int64(100 + i)}))
			must(s.Send(ctx, op.Chunk{Rec: batch([]int64{int64(i)}, 2)}))
			must(s.Barrier(ctx, &op.Barrier{Epoch: 2}, op.Watermark{At: int64(200 + i)}))
			must(s.Close(ctx))
		}()
	}
	// Before release only sender 0's epoch-1 row can be read; its epoch-2
	// row waits behind its barrier.
	it, err := in.Next(ctx)
	if err != nil || it.Chunk.Rec == nil || it.Sender != 0 || col(it.Chunk.Rec, 1)[0] != 1 {
		t.Fatalf("first item %+v, %v", it, err)
	}
	it.Chunk.Rec.Release()
	got := make(chan Item)
	go func() {
		it, err := in.Next(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- it
	}()
	select {
	case it := <-got:
		t.Fatalf("read %+v past sender 0's barrier before the others sent theirs", it)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	var epoch uint64 = 0
	rows := 0
	for {
		var it Item
		if epoch == 0 && rows == 0 {
			it = <-got
		} else if it, err = in.Next(ctx); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch {
		case it.Barrier != nil:
			if it.Barrier.Epoch != epoch+1 {
				t.Fatalf("barrier %d after epoch %d", it.Barrier.Epoch, epoch)
			}
			epoch++
			if epoch == 1 {
				if it.WM.At != 100 || len(it.Barrier.Cut) != senders {
					t.Fatalf("aligned barrier 1: watermark %d cut %v", it.WM.At, it.Barrier.Cut)
				}
			} else if it.WM.At != 200 {
				t.Fatalf("aligned barrier 2: watermark %d", it.WM.At)
			}
		default:
			if v := col(it.Chunk.Rec, 1)[0]; v != int64(epoch)+1 {
				t.Fatalf("row of epoch %d from sender %d read in epoch %d", v, it.Sender, epoch+1)
			}
			rows++
			it.Chunk.Rec.Release()
		}
	}
	wg.Wait()
	if epoch != 2 || rows != 2*senders-1 {
		t.Fatalf("epochs %d rows %d", epoch, rows)
	}
}

// TestBackpressure: a receiver that reads nothing holds at most its
// window per sender; the sender blocks, and its wait is counted.
func TestBackpressure(t *testing.T) {
	n := startNode(t)
	const window = 4
	in := openInbox(t, n, "j", 2, 0, 1, window)
	s := dial(t, n, StreamID{"j", 2, 0, 0})
	before := ReadStats()
	var sent atomic.Int64
	const total = 200
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for i := range total {
			if err := s.Send(ctx, op.Chunk{Rec: batch(make([]int64, 1000), int64(i))}); err != nil {
				done <- err
				return
			}
			sent.Add(1)
		}
		done <- s.Close(ctx)
	}()
	// Wait until the sender stalls, then check it stalled at the window.
	last := int64(-1)
	for sent.Load() != last {
		last = sent.Load()
		time.Sleep(100 * time.Millisecond)
	}
	if last != window {
		t.Fatalf("a receiver reading nothing let %d batches through, want its window %d", last, window)
	}
	if b := len(in.slots[0].items); b > window {
		t.Fatalf("inbox buffers %d batches, window %d", b, window)
	}
	ctx := context.Background()
	for i := range total {
		it, err := in.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v := col(it.Chunk.Rec, 1)[0]; v != int64(i) {
			t.Fatalf("batch %d: got %d", i, v)
		}
		it.Chunk.Rec.Release()
		if b := len(in.slots[0].items); b > window+1 {
			t.Fatalf("inbox buffers %d messages, window %d", b, window)
		}
	}
	if _, err := in.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after := ReadStats()
	if after.Backpressure <= before.Backpressure {
		t.Fatalf("backpressure time did not grow: %v -> %v", before.Backpressure, after.Backpressure)
	}
	if after.BytesSent-before.BytesSent < total*8000 || after.BytesReceived-before.BytesReceived < total*8000 {
		t.Fatalf("bytes: %+v -> %+v", before, after)
	}
}

// TestSenderDies: a stream that breaks without its end is an error for
// the receiver, not an end of input, also while the receiver aligns.
func TestSenderDies(t *testing.T) {
	n := startNode(t)
	in := openInbox(t, n, "j", 3, 0, 2, 4)
	ctx := context.Background()
	// The dying sender has a connection of its own, closed under it as a
	// killed process's would be.
	cc, err := Conn(n.addr)
	if err != nil {
		t.Fatal(err)
	}
	s0 := dial(t, n, StreamID{"j", 3, 0, 0})
	s1, err := Dial(ctx, cc, StreamID{"j", 3, 1, 0}, opkit.SchemaFor(ts2))
	if err != nil {
		t.Fatal(err)
	}
	if err := s0.Barrier(ctx, &op.Barrier{Epoch: 1}, op.Watermark{At: op.NoWatermark}); err != nil {
		t.Fatal(err)
	}
	if err := s1.Send(ctx, op.Chunk{Rec: batch([]int64{1}, 1)}); err != nil {
		t.Fatal(err)
	}
	it, err := in.Next(ctx)
	if err != nil || it.Chunk.Rec == nil {
		t.Fatalf("%+v %v", it, err)
	}
	it.Chunk.Rec.Release()
	// A second stream for an attached slot is refused.
	if dup, err := Dial(ctx, n.cc, StreamID{"j", 3, 1, 0}, opkit.SchemaFor(ts2)); err == nil {
		if err := dup.Barrier(ctx, &op.Barrier{Epoch: 1}, op.Watermark{}); err == nil || !strings.Contains(err.Error(), "attached already") {
			t.Fatalf("a second stream for sender 1: %v", err)
		}
	}
	_ = cc.Close()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := in.Next(tctx); err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a sender that died: Next returned %v, want the broken stream's error", err)
	} else {
		t.Log(err)
	}
}

// TestOutletRoutes: the outlet sends each row to the instance owning its
// key group and every instance gets the barrier.
func TestOutletRoutes(t *testing.T) {
	a, b := startNode(t), startNode(t)
	nodes := []*node{a, b}
	ins := make([]*Inbox, 2)
	for i, nd := range nodes {
		var err error
		if ins[i], err = nd.srv.Open("j", 4, i, 1, 2); err != nil {
			t.Fatal(err)
		}
		defer ins[i].Close()
	}
	ctx := context.Background()
	var ss []*Sender
	for i, nd := range nodes {
		ss = append(ss, dial(t, nd, StreamID{"j", 4, 0, i}))
	}
	o := NewOutlet(ctx, ss, []int{0}, ts2)
	keys := make([]int64, 500)
	for i := range keys {
		keys[i] = int64(i)
	}
	go func() {
		if err := o.Emit(nil, op.Chunk{Rec: batch(keys, 0), Ops: make([]types.ChangeOp, len(keys))}); err != nil {
			t.Error(err)
		}
		if err := o.Barrier(&op.Barrier{Epoch: 1}, op.Watermark{At: op.NoWatermark}); err != nil {
			t.Error(err)
		}
		if err := o.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	seen := 0
	for i, in := range ins {
		barriers := 0
		for {
			it, err := in.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if it.Barrier != nil {
				barriers++
				continue
			}
			k := col(it.Chunk.Rec, 0)
			h := accum.HashColumns(nil, []arrow.Array{it.Chunk.Rec.Column(0)}, len(k))
			for r := range k {
				if inst := op.InstanceOf(op.KeyGroup(h[r]), 2); inst != i {
					t.Fatalf("key %d at instance %d, owned by %d", k[r], i, inst)
				}
			}
			if len(it.Chunk.Ops) != len(k) {
				t.Fatalf("ops %d rows %d", len(it.Chunk.Ops), len(k))
			}
			seen += len(k)
			it.Chunk.Rec.Release()
		}
		if barriers != 1 {
			t.Fatalf("instance %d: %d barriers", i, barriers)
		}
	}
	if seen != len(keys) {
		t.Fatalf("%d rows arrived of %d", seen, len(keys))
	}
}

// TestReceiverCloses: a sender blocked on credit gets an error when the
// receiver closes its inbox, and the receiver's handler ends.
func TestReceiverCloses(t *testing.T) {
	n := startNode(t)
	in, err := n.srv.Open("j", 5, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := dial(t, n, StreamID{"j", 5, 0, 0})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := s.Send(context.Background(), op.Chunk{Rec: batch([]int64{1}, int64(i))}); err != nil {
				done <- err
				return
			}
		}
	}()
	it, err := in.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	it.Chunk.Rec.Release()
	in.Close()
	select {
	case err := <-done:
		if !strings.Contains(err.Error(), "receiver closed") {
			t.Fatalf("sender: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a sender blocked on credit did not notice its receiver closed")
	}
	// The inbox can be opened again (a restarted instance).
	in2, err := n.srv.Open("j", 5, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	in2.Close()
}

// TestNumericDisplayScales: the display scales of unconstrained NUMERIC
// values and numeric[] elements (a buffer Arrow IPC does not carry) cross
// the exchange with their rows, a sliced batch's too.
func TestNumericDisplayScales(t *testing.T) {
	tArr := types.ArrayOfT(types.TNumeric)
	ts := []types.T{types.TNumeric, tArr, types.TInt64}
	nums := []string{"1.50", "", "2", "0.000", "-7.125", "3.0"}
	arrs := []string{"{1.10,2}", "{}", "", "{0.00,NULL,5.5}", "{4}", "{1.000}"}
	bs := make([]array.Builder, len(ts))
	for i, ty := range ts {
		bs[i] = types.NewBuilder(memory.DefaultAllocator, ty)
	}
	for i := range nums {
		for c, s := range []string{nums[i], arrs[i], "1"} {
			d := types.Datum{Null: true}
			if s != "" {
				var err error
				if d, err = types.ParseText(s, ts[c]); err != nil {
					t.Fatal(err)
				}
			}
			types.AppendDatum(bs[c], d, ts[c])
		}
	}
	cols := make([]arrow.Array, len(ts))
	for i, b := range bs {
		cols[i] = b.NewArray()
		b.Release()
	}
	whole := opkit.NewRecord(ts, cols, len(nums))
	text := func(rec arrow.RecordBatch) []string {
		var out []string
		for r := range int(rec.NumRows()) {
			row := ""
			for c, ty := range ts {
				d := types.DatumAt(rec.Column(c), r, ty)
				if d.Null {
					row += "NULL|"
				} else {
					row += types.TextOf(d, ty) + "|"
				}
			}
			out = append(out, row)
		}
		return out
	}
	want := text(whole)
	if want[0] != "1.50|{1.10,2}|1|" || want[3] != "0.000|{0.00,NULL,5.5}|1|" {
		t.Fatalf("the batch as built prints %q", want)
	}
	n := startNode(t)
	in := openInbox(t, n, "j", 0, 0, 1, 4)
	s, err := Dial(context.Background(), n.cc, StreamID{"j", 0, 0, 0}, opkit.SchemaFor(ts))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	whole.Retain()
	sent := []arrow.RecordBatch{whole, whole.NewSlice(2, 5)}
	go func() {
		for _, rec := range sent {
			if err := s.Send(ctx, op.Chunk{Rec: rec}); err != nil {
				t.Error(err)
				return
			}
		}
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	for i, w := range [][]string{want, want[2:5]} {
		it, err := in.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := text(it.Chunk.Rec); strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Fatalf("batch %d arrived as\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
		it.Chunk.Rec.Release()
	}
	if _, err := in.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("after the end: %v, want io.EOF", err)
	}
	whole.Release()
}
