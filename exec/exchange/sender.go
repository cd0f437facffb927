package exchange

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/storage"
	"google.golang.org/grpc"
)

// Sender is the sending end of one stream. One goroutine calls Send,
// Barrier and Close; a second reads the receiver's credit.
type Sender struct {
	id     StreamID
	stream flight.FlightService_DoExchangeClient
	cancel context.CancelFunc
	mem    memory.Allocator

	mu     sync.Mutex
	credit int
	err    error         // why the stream is dead (set before dead is closed)
	wake   chan struct{} // credit arrived (capacity 1)
	dead   chan struct{} // closed when the credit reader stops
}

// Dial opens the stream id to the receiver behind cc (a connection to the
// receiving node's Flight server, shared by all its streams) and sends the
// schema of the edge's batches. The stream lives until Close, or until ctx
// is done.
func Dial(ctx context.Context, cc grpc.ClientConnInterface, id StreamID, schema *arrow.Schema) (*Sender, error) {
	sctx, cancel := context.WithCancel(ctx)
	stream, err := flight.NewFlightServiceClient(cc).DoExchange(sctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("exchange: open %s: %w", id, err)
	}
	s := &Sender{id: id, stream: stream, cancel: cancel, mem: memory.DefaultAllocator,
		wake: make(chan struct{}, 1), dead: make(chan struct{})}
	p := ipc.GetSchemaPayload(schema, s.mem)
	fd := &flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: id.path()},
		DataHeader: bytes.Clone(p.Meta().Bytes())}
	p.Release()
	if err := stream.Send(fd); err != nil {
		cancel()
		return nil, fmt.Errorf("exchange: open %s: %w", id, err)
	}
	go s.readCredit()
	return s, nil
}

// readCredit adds the receiver's grants to the sender's credit until the
// receiver ends the stream.
func (s *Sender) readCredit() {
	var err error
	for {
		var fd *flight.FlightData
		if fd, err = s.stream.Recv(); err != nil {
			break
		}
		if len(fd.AppMetadata) == 1 && fd.AppMetadata[0] == kindEnd {
			err = io.EOF // the receiver closed its inbox
			s.cancel()
			break
		}
		var n int
		if n, err = parseCredit(fd.AppMetadata); err != nil {
			break
		}
		s.mu.Lock()
		s.credit += n
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("exchange: %s: the receiver closed the stream", s.id)
	} else {
		err = fmt.Errorf("exchange: %s: %w", s.id, err)
	}
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	close(s.dead)
}

// take waits for one credit, counting the wait as backpressure.
func (s *Sender) take(ctx context.Context) error {
	var start time.Time
	for {
		s.mu.Lock()
		if s.credit > 0 {
			s.credit--
			s.mu.Unlock()
			if !start.IsZero() {
				backpressureNanos.Add(int64(time.Since(start)))
			}
			return nil
		}
		s.mu.Unlock()
		if start.IsZero() {
			start = time.Now()
		}
		select {
		case <-s.wake:
		case <-s.dead:
			return s.deadErr()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Sender) deadErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Sender) send(fd *flight.FlightData) error {
	if err := s.stream.Send(fd); err != nil {
		if errors.Is(err, io.EOF) { // the real error is the stream's status
			select {
			case <-s.dead:
				return s.deadErr()
			case <-time.After(time.Second):
			}
		}
		return fmt.Errorf("exchange: %s: %w", s.id, err)
	}
	bytesSent.Add(int64(len(fd.DataHeader) + len(fd.DataBody) + len(fd.AppMetadata)))
	return nil
}

// Send sends c's rows, waiting for credit; it takes ownership of c.Rec.
func (s *Sender) Send(ctx context.Context, c op.Chunk) error {
	defer c.Rec.Release()
	if err := s.take(ctx); err != nil {
		return err
	}
	p, err := ipc.GetRecordBatchPayload(c.Rec, ipc.WithAllocator(s.mem))
	if err != nil {
		return fmt.Errorf("exchange: %s: %w", s.id, err)
	}
	defer p.Release()
	// A new buffer each time (gRPC may read a sent message late), sized
	// for the batch's buffers and their padding so it is not regrown.
	body := bytes.NewBuffer(make([]byte, 0, bodySize(c.Rec)))
	if err := p.SerializeBody(body); err != nil {
		return fmt.Errorf("exchange: %s: %w", s.id, err)
	}
	return s.send(&flight.FlightData{DataHeader: bytes.Clone(p.Meta().Bytes()), DataBody: body.Bytes(), AppMetadata: dataMeta(c)})
}

// Barrier sends b with the watermark of the rows sent before it.
func (s *Sender) Barrier(ctx context.Context, b *op.Barrier, wm op.Watermark) error {
	if err := s.take(ctx); err != nil {
		return err
	}
	return s.send(&flight.FlightData{AppMetadata: barrierMeta(b, wm)})
}

// Close ends the stream cleanly and waits until the receiver has taken
// the end (the receiver's consumer may still be reading the stream's
// buffered messages). Close after a failed Send only releases the stream.
func (s *Sender) Close(ctx context.Context) error {
	defer s.cancel()
	err := s.send(&flight.FlightData{AppMetadata: []byte{kindEnd}})
	if err == nil {
		err = s.stream.CloseSend()
	}
	if err != nil {
		return err
	}
	select {
	case <-s.dead: // the receiver's handler returned: it has the end
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Abort breaks the stream without its end: the receiver sees an error.
func (s *Sender) Abort() { s.cancel() }

// bodySize estimates the IPC body of rec (buffers padded to 64 bytes),
// at most 1 MiB: a slice's buffers are its parent's, and the buffer grows
// past the estimate if it must.
func bodySize(rec arrow.RecordBatch) int { return min(storage.PaddedBufferBytes(rec, 64), 1<<20) }
