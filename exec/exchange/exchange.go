// Package exchange carries one edge of a job's dataflow between operator
// instances on different nodes over Arrow Flight (gRPC DoExchange): the
// network form of the in-process channel seam (op.Outlet on the producing
// side, an aligning inbox on the consuming side).
//
// One Flight stream per (job, edge, sender instance, receiver instance).
// The sender's messages are Arrow IPC record batches (its first message is
// the schema, with the stream's descriptor), each with its rows' change ops
// and key groups in app_metadata; barriers, with the sender's watermark and
// cut, and the end of the stream travel as app_metadata-only messages.
// The receiver answers with credit: it grants a window of messages when
// the stream attaches and returns credit as its consumer takes messages,
// so a sender never has more than the window in flight and a slow receiver
// backpressures its senders (Flink's credit-based flow control). The
// receiver aligns barriers across its senders as the in-process aligner
// does: a sender whose barrier N arrived is not read again until every
// sender's has.
//
// A stream that breaks without its end message (the sender's process died,
// the network failed) is an error for the receiver: the job fails and is
// recovered from its last checkpoint, as a failure in one process is.
package exchange

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/op"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// StreamID names one stream of an edge: the job, the edge in the job's
// graph, and the sending and receiving instances.
type StreamID struct {
	Job              string
	Edge             int
	Sender, Receiver int
}

func (id StreamID) String() string {
	return fmt.Sprintf("%s/%d/%d/%d", id.Job, id.Edge, id.Sender, id.Receiver)
}

// path is the Flight descriptor path naming the stream.
func (id StreamID) path() []string {
	return []string{id.Job, strconv.Itoa(id.Edge), strconv.Itoa(id.Sender), strconv.Itoa(id.Receiver)}
}

func parseStreamID(p []string) (StreamID, error) {
	if len(p) != 4 {
		return StreamID{}, fmt.Errorf("exchange: descriptor path %q is not job/edge/sender/receiver", strings.Join(p, "/"))
	}
	var n [3]int
	for i := range n {
		v, err := strconv.Atoi(p[i+1])
		if err != nil || v < 0 {
			return StreamID{}, fmt.Errorf("exchange: descriptor path %q: bad number %q", strings.Join(p, "/"), p[i+1])
		}
		n[i] = v
	}
	return StreamID{Job: p[0], Edge: n[0], Sender: n[1], Receiver: n[2]}, nil
}

// Message kinds, the first byte of app_metadata.
const (
	kindData    byte = 1 // a record batch; then flags, the ops and groups
	kindBarrier byte = 2 // a barrier with the sender's watermark and cut
	kindEnd     byte = 3 // the sender closed the stream cleanly (from the receiver: it closed its inbox)
	kindCredit  byte = 4 // receiver to sender: this many more messages
)

// Flags of a data message.
const (
	dataOps     byte = 1 << 0
	dataGroups  byte = 1 << 1
	dataDScales byte = 1 << 2
)

// Flags of a barrier message.
const (
	barCheckpoint byte = 1 << iota
	barCatchUp
	barSavepoint
	barNoSnapshot
	barIdle
)

// DefaultWindow is the credit a receiver grants each sender: the most
// messages (batches and barriers) in flight or buffered per stream.
const DefaultWindow = 8

// dataMeta encodes a chunk's ops and key groups, and the display scales
// of its unconstrained NUMERIC values (types.DScales: a buffer Arrow IPC
// does not carry), as sections of the column's number, a kind (0: a
// numeric column, 1: a numeric[] column's elements), a count and one byte
// each.
func dataMeta(c op.Chunk) []byte {
	b := make([]byte, 2, 2+len(c.Ops)+len(c.Groups))
	b[0] = kindData
	if c.Ops != nil {
		b[1] |= dataOps
		for _, o := range c.Ops {
			b = append(b, byte(o))
		}
	}
	if c.Groups != nil {
		b[1] |= dataGroups
		b = append(b, c.Groups...)
	}
	for i, col := range c.Rec.Columns() {
		var kind byte
		var ds []int8
		switch a := col.(type) {
		case *array.Decimal128:
			ds = types.DScales(a)
		case *array.List:
			if all := types.ListDScales(a); all != nil && a.Len() > 0 {
				// IPC sends the elements the rows use, from the first
				// row's start: so do their scales.
				lo, _ := a.ValueOffsets(0)
				_, hi := a.ValueOffsets(a.Len() - 1)
				kind, ds = 1, all[lo:hi]
			}
		}
		if ds == nil {
			continue
		}
		b[1] |= dataDScales
		b = binary.BigEndian.AppendUint16(b, uint16(i))
		b = append(b, kind)
		b = binary.BigEndian.AppendUint32(b, uint32(len(ds)))
		for _, d := range ds {
			b = append(b, byte(d))
		}
	}
	return b
}

// parseDataMeta fills c's ops and groups from a data message of n rows
// and gives c.Rec back the display scales the message carries (it takes
// over c.Rec, replacing it when it does).
func parseDataMeta(m []byte, n int, c *op.Chunk) error {
	if len(m) < 2 || m[0] != kindData {
		return fmt.Errorf("exchange: malformed data message metadata")
	}
	flags, rest := m[1], m[2:]
	if flags&dataOps != 0 {
		if len(rest) < n {
			return fmt.Errorf("exchange: data message has %d ops for %d rows", len(rest), n)
		}
		c.Ops = make([]types.ChangeOp, n)
		for i := range n {
			c.Ops[i] = types.ChangeOp(int8(rest[i]))
		}
		rest = rest[n:]
	}
	if flags&dataGroups != 0 {
		if len(rest) < n {
			return fmt.Errorf("exchange: data message has %d key groups for %d rows", len(rest), n)
		}
		c.Groups = append([]uint8(nil), rest[:n]...)
		rest = rest[n:]
	}
	if flags&dataDScales != 0 {
		var err error
		if rest, err = attachDScales(rest, c); err != nil {
			return err
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("exchange: data message metadata has %d bytes too many", len(rest))
	}
	return nil
}

// attachDScales reads dataMeta's display-scale sections from m onto the
// columns of c.Rec and returns what follows them.
func attachDScales(m []byte, c *op.Chunk) ([]byte, error) {
	cols := slices.Clone(c.Rec.Columns())
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	for len(m) > 0 {
		if len(m) < 7 {
			return nil, fmt.Errorf("exchange: malformed display-scale section")
		}
		col, kind, cnt := int(binary.BigEndian.Uint16(m)), m[2], int(binary.BigEndian.Uint32(m[3:]))
		m = m[7:]
		if col >= len(cols) || len(m) < cnt {
			return nil, fmt.Errorf("exchange: display-scale section for column %d of %d, %d bytes of %d", col, len(cols), cnt, len(m))
		}
		ds := make([]int8, cnt)
		for i := range ds {
			ds[i] = int8(m[i])
		}
		m = m[cnt:]
		var a arrow.Array
		switch arr := cols[col].(type) {
		case *array.Decimal128:
			if kind == 0 && arr.Len() == cnt {
				a = types.AttachDScales(arr, ds)
			}
		case *array.List:
			if kind == 1 && arr.ListValues().Len() == cnt {
				a = types.AttachListDScales(arr, ds)
			}
		}
		if a == nil {
			return nil, fmt.Errorf("exchange: display-scale section (kind %d, %d values) does not fit column %d (%s)", kind, cnt, col, cols[col].DataType())
		}
		made = append(made, a)
		cols[col] = a
	}
	rec := array.NewRecordBatch(c.Rec.Schema(), cols, c.Rec.NumRows())
	c.Rec.Release()
	c.Rec = rec
	return m, nil
}

// barrierMeta encodes a barrier with the sender's watermark.
func barrierMeta(b *op.Barrier, wm op.Watermark) []byte {
	out := make([]byte, 2, 22+20*len(b.Cut))
	out[0] = kindBarrier
	for _, f := range []struct {
		on  bool
		bit byte
	}{{b.Checkpoint, barCheckpoint}, {b.CatchUp, barCatchUp}, {b.Savepoint, barSavepoint}, {b.NoSnapshot, barNoSnapshot}, {wm.Idle, barIdle}} {
		if f.on {
			out[1] |= f.bit
		}
	}
	out = binary.BigEndian.AppendUint64(out, b.Epoch)
	out = binary.BigEndian.AppendUint64(out, uint64(wm.At))
	out = binary.BigEndian.AppendUint32(out, uint32(len(b.Cut)))
	for p, off := range b.Cut {
		out = binary.BigEndian.AppendUint64(out, p.Table)
		out = binary.BigEndian.AppendUint32(out, p.Part)
		out = binary.BigEndian.AppendUint64(out, off)
	}
	return out
}

func parseBarrierMeta(m []byte) (*op.Barrier, op.Watermark, error) {
	if len(m) < 22 || m[0] != kindBarrier {
		return nil, op.Watermark{}, fmt.Errorf("exchange: malformed barrier message")
	}
	f := m[1]
	b := &op.Barrier{Epoch: binary.BigEndian.Uint64(m[2:]), Checkpoint: f&barCheckpoint != 0, CatchUp: f&barCatchUp != 0,
		Savepoint: f&barSavepoint != 0, NoSnapshot: f&barNoSnapshot != 0}
	wm := op.Watermark{At: int64(binary.BigEndian.Uint64(m[10:])), Idle: f&barIdle != 0}
	n := int(binary.BigEndian.Uint32(m[18:]))
	rest := m[22:]
	if len(rest) != 20*n {
		return nil, op.Watermark{}, fmt.Errorf("exchange: barrier message has a cut of %d bytes for %d partitions", len(rest), n)
	}
	if n > 0 {
		b.Cut = make(storage.Cut, n)
		for i := range n {
			e := rest[20*i:]
			b.Cut[storage.LogPart{Table: binary.BigEndian.Uint64(e), Part: binary.BigEndian.Uint32(e[8:])}] = binary.BigEndian.Uint64(e[12:])
		}
	}
	return b, wm, nil
}

func creditMeta(n int) []byte {
	return binary.BigEndian.AppendUint32([]byte{kindCredit}, uint32(n))
}

func parseCredit(m []byte) (int, error) {
	if len(m) != 5 || m[0] != kindCredit {
		return 0, fmt.Errorf("exchange: malformed credit message")
	}
	return int(binary.BigEndian.Uint32(m[1:])), nil
}

// Counters of this process's exchanges, for /metrics.
var (
	bytesSent, bytesReceived atomic.Int64
	backpressureNanos        atomic.Int64
)

// Stats is this process's exchange traffic since it started.
type Stats struct {
	BytesSent, BytesReceived int64
	// Backpressure is the time senders waited for credit.
	Backpressure time.Duration
}

// ReadStats returns the process's exchange counters.
func ReadStats() Stats {
	return Stats{BytesSent: bytesSent.Load(), BytesReceived: bytesReceived.Load(), Backpressure: time.Duration(backpressureNanos.Load())}
}
