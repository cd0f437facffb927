package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/storage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// attachWait is how long a stream that arrives before its receiver opened
// its inbox waits for it (the instances of a job start in any order).
const attachWait = 10 * time.Second

type inboxKey struct {
	job            string
	edge, receiver int
}

// Server is a node's Flight service for exchanges: it hands each incoming
// stream to the inbox its receiver opened.
type Server struct {
	flight.BaseFlightServer
	mu      sync.Mutex
	changed chan struct{} // closed and replaced when an inbox opens
	inboxes map[inboxKey]*Inbox
}

// NewServer returns a Server with no inboxes.
func NewServer() *Server {
	return &Server{changed: make(chan struct{}), inboxes: map[inboxKey]*Inbox{}}
}

// Register serves s's Flight service on gs.
func (s *Server) Register(gs *grpc.Server) { flight.RegisterFlightServiceServer(gs, s) }

// Open opens the inbox of receiving instance receiver of a job's edge,
// with one slot per sending instance, each granted window messages of
// credit. Close it when the instance stops.
func (s *Server) Open(job string, edge, receiver, senders, window int) (*Inbox, error) {
	if window <= 0 {
		window = DefaultWindow
	}
	k := inboxKey{job, edge, receiver}
	in := &Inbox{srv: s, key: k, window: window, done: make(chan struct{}), failed: make(chan error, senders),
		slots: make([]slot, senders), blocked: make([]bool, senders), wms: make([]op.Watermark, senders)}
	for i := range in.slots {
		in.slots[i].items = make(chan item, window+1) // + the end
		in.wms[i].At = op.NoWatermark
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inboxes[k] != nil {
		return nil, fmt.Errorf("exchange: inbox %s/%d/%d is open already", job, edge, receiver)
	}
	s.inboxes[k] = in
	close(s.changed)
	s.changed = make(chan struct{})
	return in, nil
}

// inbox waits for the inbox of k to open.
func (s *Server) inbox(ctx context.Context, k inboxKey) (*Inbox, error) {
	deadline := time.NewTimer(attachWait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		in, ch := s.inboxes[k], s.changed
		s.mu.Unlock()
		if in != nil {
			return in, nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return nil, status.Errorf(codes.NotFound, "exchange: no receiver %s/%d/%d on this node", k.job, k.edge, k.receiver)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// DoExchange receives one stream: its first message names it and holds
// the schema; the handler reads it into its inbox slot until the end.
func (s *Server) DoExchange(stream flight.FlightService_DoExchangeServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if first.FlightDescriptor == nil {
		return status.Error(codes.InvalidArgument, "exchange: the first message has no descriptor")
	}
	id, err := parseStreamID(first.FlightDescriptor.Path)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	in, err := s.inbox(stream.Context(), inboxKey{id.Job, id.Edge, id.Receiver})
	if err != nil {
		return err
	}
	return in.attach(stream, id, first)
}

// item is what a stream's handler hands its inbox: a chunk, a barrier,
// or the end of the stream.
type item struct {
	c   op.Chunk
	b   *op.Barrier
	wm  op.Watermark
	end bool
}

type slot struct {
	items    chan item
	mu       sync.Mutex // guards stream and attached
	stream   flight.FlightService_DoExchangeServer
	attached bool
	consumed int // messages taken since the last credit returned
	ended    bool
}

// Inbox is a receiving instance's end of an edge: it merges its senders'
// streams and aligns their barriers. One goroutine calls Next.
type Inbox struct {
	srv    *Server
	key    inboxKey
	window int
	slots  []slot
	done   chan struct{}
	once   sync.Once
	failed chan error

	blocked []bool
	arrived int
	ended   int
	wms     []op.Watermark
	wm      op.Watermark // passed on with the last aligned barrier
	cut     storage.Cut
	epoch   uint64
	last    op.Barrier // the barrier being aligned
	cases   []reflect.SelectCase
	idx     []int
}

// msgSource feeds a stream's IPC messages to an ipc.Reader and hands the
// control messages between them (barriers, the end) to the inbox in
// stream order.
type msgSource struct {
	stream  flight.FlightService_DoExchangeServer
	first   *flight.FlightData
	meta    []byte // app_metadata of the last data message
	control func(m []byte) (end bool, err error)
	ended   bool
}

func (m *msgSource) Message() (*ipc.Message, error) {
	for {
		fd := m.first
		m.first = nil
		if fd == nil {
			var err error
			if fd, err = m.stream.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF // an EOF here is a stream without its end
				}
				return nil, err
			}
		}
		bytesReceived.Add(int64(len(fd.DataHeader) + len(fd.DataBody) + len(fd.AppMetadata)))
		if len(fd.DataHeader) == 0 {
			end, err := m.control(fd.AppMetadata)
			if err != nil {
				return nil, err
			}
			if end {
				m.ended = true
				return nil, io.EOF
			}
			continue
		}
		m.meta = fd.AppMetadata
		return ipc.NewMessage(memory.NewBufferBytes(fd.DataHeader), memory.NewBufferBytes(fd.DataBody)), nil
	}
}

func (m *msgSource) Retain()  {}
func (m *msgSource) Release() {}

// attach reads sender id.Sender's stream into its slot until the stream's
// end, a broken stream, or the inbox closing.
func (in *Inbox) attach(stream flight.FlightService_DoExchangeServer, id StreamID, first *flight.FlightData) error {
	if id.Sender >= len(in.slots) {
		return status.Errorf(codes.InvalidArgument, "exchange: %s: the receiver has %d senders", id, len(in.slots))
	}
	sl := &in.slots[id.Sender]
	sl.mu.Lock()
	if sl.attached {
		sl.mu.Unlock()
		return status.Errorf(codes.AlreadyExists, "exchange: %s is attached already", id)
	}
	sl.attached, sl.stream = true, stream
	err := stream.Send(&flight.FlightData{AppMetadata: creditMeta(in.window)})
	sl.mu.Unlock()
	defer func() { // no Send on a stream whose handler returned
		sl.mu.Lock()
		sl.stream = nil
		sl.mu.Unlock()
	}()
	if err != nil {
		return in.fail(id, err)
	}
	push := func(it item) error {
		select {
		case <-in.done:
			return status.Error(codes.Canceled, "exchange: the receiver closed")
		default:
		}
		select {
		case sl.items <- it:
			return nil
		case <-in.done:
			return status.Error(codes.Canceled, "exchange: the receiver closed")
		}
	}
	src := &msgSource{stream: stream, first: first, control: func(m []byte) (bool, error) {
		if len(m) == 1 && m[0] == kindEnd {
			return true, push(item{end: true})
		}
		b, wm, err := parseBarrierMeta(m)
		if err != nil {
			return false, err
		}
		return false, push(item{b: b, wm: wm})
	}}
	rdr, err := ipc.NewReaderFromMessageReader(src, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return in.fail(id, err)
	}
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		c := op.Chunk{Rec: rec}
		if err := parseDataMeta(src.meta, int(rec.NumRows()), &c); err != nil {
			rec.Release()
			return in.fail(id, err)
		}
		if err := push(item{c: c}); err != nil {
			rec.Release()
			return err
		}
	}
	if err := rdr.Err(); err != nil {
		return in.fail(id, err)
	}
	if !src.ended {
		return in.fail(id, io.ErrUnexpectedEOF)
	}
	return nil
}

// fail records that sender id's stream broke.
func (in *Inbox) fail(id StreamID, err error) error {
	select {
	case in.failed <- fmt.Errorf("exchange: stream %s broke: %w", id, err):
	default:
	}
	return err
}

// Item is what Next returns: a chunk, or a barrier aligned across every
// sender with the combined watermark.
type Item struct {
	Chunk   op.Chunk
	Barrier *op.Barrier
	WM      op.Watermark
	// Sender is the instance a chunk came from.
	Sender int
}

// Next returns the next chunk (the caller owns its record) or aligned
// barrier; io.EOF once every sender ended its stream; an error when a
// stream broke (the inbox is then useless: close it).
func (in *Inbox) Next(ctx context.Context) (Item, error) {
	for {
		select {
		case err := <-in.failed:
			return Item{}, err
		default:
		}
		if in.ended == len(in.slots) {
			return Item{}, io.EOF
		}
		in.cases = append(in.cases[:0],
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(in.failed)})
		in.idx = in.idx[:0]
		for i := range in.slots {
			if in.blocked[i] || in.slots[i].ended {
				continue
			}
			in.cases = append(in.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(in.slots[i].items)})
			in.idx = append(in.idx, i)
		}
		chosen, v, _ := reflect.Select(in.cases)
		switch chosen {
		case 0:
			return Item{}, ctx.Err()
		case 1:
			return Item{}, v.Interface().(error)
		}
		i := in.idx[chosen-2]
		it := v.Interface().(item)
		in.credit(i)
		switch {
		case it.end:
			// An ended sender counts as aligned (Flink's finished input).
			in.slots[i].ended = true
			in.ended++
			if in.arrived > 0 && in.arrived+in.ended == len(in.slots) {
				return in.aligned(), nil
			}
		case it.b == nil:
			return Item{Chunk: it.c, Sender: i}, nil
		default:
			if err := in.align(i, it); err != nil {
				return Item{}, err
			}
			if in.arrived+in.ended == len(in.slots) {
				return in.aligned(), nil
			}
		}
	}
}

// align records sender i's barrier.
func (in *Inbox) align(i int, it item) error {
	if in.arrived == 0 {
		in.epoch, in.cut = it.b.Epoch, nil
	} else if it.b.Epoch != in.epoch {
		return fmt.Errorf("exchange: %s/%d/%d: sender %d sent barrier %d while aligning barrier %d", in.key.job, in.key.edge, in.key.receiver, i, it.b.Epoch, in.epoch)
	}
	for p, off := range it.b.Cut {
		if in.cut == nil {
			in.cut = storage.Cut{}
		}
		in.cut[p] = off
	}
	in.last = *it.b
	in.wms[i] = it.wm
	in.blocked[i] = true
	in.arrived++
	return nil
}

// aligned ends the alignment of the current barrier and returns it, with
// the senders' cuts merged and their watermarks combined.
func (in *Inbox) aligned() Item {
	for k := range in.blocked {
		in.blocked[k] = false
	}
	in.arrived = 0
	b := in.last
	b.Cut = in.cut
	w := op.CombineWatermarks(in.wms) // as the in-process aligner combines its inputs'
	if w.At < in.wm.At {
		w.At = in.wm.At // never lower than an earlier barrier's
	}
	in.wm = w
	return Item{Barrier: &b, WM: w}
}

// credit counts a message taken from sender i and returns credit once
// half the window has been taken. A grant that fails is dropped: the
// stream is over, and its handler reports a broken one.
func (in *Inbox) credit(i int) {
	sl := &in.slots[i]
	sl.consumed++
	if sl.consumed < max(1, in.window/2) {
		return
	}
	n := sl.consumed
	sl.consumed = 0
	sl.mu.Lock()
	if sl.stream != nil {
		_ = sl.stream.Send(&flight.FlightData{AppMetadata: creditMeta(n)})
	}
	sl.mu.Unlock()
}

// Close unregisters the inbox, stops its streams' handlers and releases
// what they buffered.
func (in *Inbox) Close() {
	in.once.Do(func() {
		in.srv.mu.Lock()
		if in.srv.inboxes[in.key] == in {
			delete(in.srv.inboxes, in.key)
		}
		in.srv.mu.Unlock()
		close(in.done)
		// Tell attached senders the receiver is gone: each cancels its
		// stream, which ends the handler blocked reading it.
		for i := range in.slots {
			sl := &in.slots[i]
			sl.mu.Lock()
			if sl.stream != nil {
				_ = sl.stream.Send(&flight.FlightData{AppMetadata: []byte{kindEnd}})
			}
			sl.mu.Unlock()
		}
		for i := range in.slots {
			for {
				select {
				case it := <-in.slots[i].items:
					if it.c.Rec != nil {
						it.c.Rec.Release()
					}
					continue
				default:
				}
				break
			}
		}
	})
}
