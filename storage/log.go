package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// A stream's log is a sequence of blocks per partition. A block holds the
// rows [offset, offset+n) as one Arrow IPC record batch, prefixed with a
// header: n (4 bytes) and the time it was written (8 bytes, Unix
// milliseconds), which retention reads. Offsets are assigned under the
// partition's lock and blocks are applied in offset order, so a reader that
// sees offset o sees every offset below it. A log's oldest blocks may be
// truncated (Log.Truncate); readers then start at its new start.

// blockHeader is the size of a block's header.
const blockHeader = 12

// blockRows and blockTime read a block's header.
func blockRows(v []byte) uint64 { return uint64(binary.BigEndian.Uint32(v)) }
func blockTime(v []byte) int64  { return int64(binary.BigEndian.Uint64(v[4:])) }

// nowMillis is the time a block is written, as its header records it.
func nowMillis() int64 { return time.Now().UnixMilli() }

// errStopScan ends a scanPrefix early.
var errStopScan = errors.New("stop scan")

type logKey struct {
	table uint64
	part  uint32
}

type partitionLog struct {
	mu     sync.Mutex // serialises appends
	loaded bool
	start  uint64 // oldest retained offset
	next   uint64 // next offset to assign; every offset below is visible
	notify chan struct{}
	marks  []cutMark // barrier positions of the rounds in flight (cut.go)
}

// wake tells everyone waiting on the partition (readers at its end,
// writers held back by a cut) that it changed. pl.mu must be held.
func (pl *partitionLog) wake() {
	close(pl.notify)
	pl.notify = make(chan struct{})
}

// advance makes offsets below next visible and wakes the waiters, if next
// moved. pl.mu must be held.
func (pl *partitionLog) advance(next uint64) {
	if next != pl.next {
		pl.next = next
		pl.wake()
	}
}

func logPrefix(table uint64, part uint32) []byte {
	k := make([]byte, 0, 22)
	k = append(k, "l/"...)
	k = binary.BigEndian.AppendUint64(k, table)
	return binary.BigEndian.AppendUint32(k, part)
}

func logBlockKey(table uint64, part uint32, off uint64) []byte {
	return binary.BigEndian.AppendUint64(logPrefix(table, part), off)
}

func (lg Log) partition(table uint64, part uint32) (*partitionLog, error) {
	lg.db.mu.Lock()
	pl := lg.db.mu.logs[logKey{table, part}]
	if pl == nil {
		pl = &partitionLog{notify: make(chan struct{})}
		lg.db.mu.logs[logKey{table, part}] = pl
	}
	lg.db.mu.Unlock()
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.loaded {
		return pl, nil
	}
	prefix := logPrefix(table, part)
	it, err := lg.db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	defer it.Close()
	if it.First() {
		pl.start = binary.BigEndian.Uint64(it.Key()[len(prefix):])
	}
	if it.Last() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, sqlerr.Wrap(sqlerr.IOError, err)
		}
		pl.next = binary.BigEndian.Uint64(it.Key()[len(prefix):]) + blockRows(v)
	}
	pl.loaded = true
	return pl, nil
}

// EncodeBlock encodes rec as a log block.
func EncodeBlock(rec arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeBlockTo(&buf, rec); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeBlockTo encodes rec as a log block into buf, which it resets.
func encodeBlockTo(buf *bytes.Buffer, rec arrow.RecordBatch) error {
	// Size the buffer once: growing it by doubling copied each block about
	// twice and was most of the encoding time.
	buf.Reset()
	buf.Grow(blockSizeHint(rec))
	var h [blockHeader]byte
	binary.BigEndian.PutUint32(h[:], uint32(rec.NumRows()))
	binary.BigEndian.PutUint64(h[4:], uint64(nowMillis()))
	buf.Write(h[:])
	rec = types.WithDScaleColumns(rec, false)
	defer rec.Release()
	w := ipc.NewWriter(buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return sqlerr.Wrap(sqlerr.Internal, err)
	}
	if err := w.Close(); err != nil {
		return sqlerr.Wrap(sqlerr.Internal, err)
	}
	return nil
}

// blockSizeHint is an upper estimate of rec's encoded size: its buffers,
// each padded to 8 bytes, plus the schema and record batch messages.
func blockSizeHint(rec arrow.RecordBatch) int {
	return blockHeader + 1024 + 256*int(rec.NumCols()) + PaddedBufferBytes(rec, 8)
}

// PaddedBufferBytes is the size of the buffers rec's columns (and their
// children) reference, each counted pad bytes larger: an upper estimate of
// rec's Arrow IPC body with buffers padded to pad. With pad 0 it is the
// bytes rec's buffers hold (their lengths; tailcache.go's recBytes counts
// their capacities, the memory they keep).
func PaddedBufferBytes(rec arrow.RecordBatch, pad int) int {
	n := 0
	eachBuffer(rec, func(b *memory.Buffer) { n += b.Len() + pad })
	return n
}

// eachBuffer calls fn with each buffer rec's columns and their children
// reference.
func eachBuffer(rec arrow.RecordBatch, fn func(b *memory.Buffer)) {
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				fn(b)
			}
		}
		for _, c := range d.Children() {
			add(c)
		}
	}
	for _, c := range rec.Columns() {
		add(c.Data())
	}
}

// DecodeBlock decodes a log block. The record's buffers are slices of one
// copy of v, made without zeroing it first, rather than one zeroed
// allocation per buffer filled by a second pass: decoding was most of a
// batch scan's time outside the operators. So the record is not allocated
// from mem (mem is kept for callers' sake) and the garbage collector, not
// Release, frees it.
func DecodeBlock(mem memory.Allocator, v []byte) (arrow.RecordBatch, error) {
	if len(v) < blockHeader {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "log block too short")
	}
	msgs := &blockMessages{b: bytes.Clone(v[blockHeader:])}
	r, err := ipc.NewReaderFromMessageReader(msgs, ipc.WithAllocator(mem))
	if err != nil {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "log block: %v", err)
	}
	defer r.Release()
	if !r.Next() {
		return nil, sqlerr.New(sqlerr.DataCorrupted, "log block: no record: %v", r.Err())
	}
	rec := r.RecordBatch()
	rec.Retain()
	// A table's or stream's block written before arrays were typed lists
	// holds them as List<String>: read it in today's layout.
	return types.UpgradeArrayLayout(types.FromDScaleColumns(rec)), nil
}

// blockMessages reads the IPC messages of a block in place: each message's
// metadata and body are slices of b.
type blockMessages struct {
	b   []byte
	msg *ipc.Message // the current message, released on the next call
}

func (m *blockMessages) Message() (*ipc.Message, error) {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	// A message is 0xFFFFFFFF, the metadata length n, n bytes of
	// metadata (a flatbuffer that holds the body length), then the body.
	if len(m.b) < 8 || binary.LittleEndian.Uint32(m.b) != 0xFFFFFFFF {
		return nil, io.EOF
	}
	n := int64(binary.LittleEndian.Uint32(m.b[4:]))
	if n == 0 {
		return nil, io.EOF
	}
	if n < 4 || n > int64(len(m.b)-8) {
		return nil, fmt.Errorf("message metadata length %d out of range", n)
	}
	meta := memory.NewBufferBytes(m.b[8 : 8+n])
	rest := m.b[8+n:]
	bodyLen, err := messageBodyLen(meta)
	if err != nil {
		return nil, err
	}
	if bodyLen < 0 || bodyLen > int64(len(rest)) {
		return nil, fmt.Errorf("message body length %d out of range", bodyLen)
	}
	m.msg = ipc.NewMessage(meta, memory.NewBufferBytes(rest[:bodyLen]))
	m.b = rest[bodyLen:]
	return m.msg, nil
}

// messageBodyLen reads the body length from a message's metadata.
func messageBodyLen(meta *memory.Buffer) (n int64, err error) {
	defer func() {
		if recover() != nil {
			err = errors.New("invalid message metadata")
		}
	}()
	msg := ipc.NewMessage(meta, memory.NewBufferBytes(nil))
	defer msg.Release()
	return msg.BodyLen(), nil
}

func (m *blockMessages) Retain() {}

func (m *blockMessages) Release() {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

// Append appends recs, as consecutive blocks, to one partition of a
// stream and returns the first offset once they are durable. All blocks
// commit atomically, and concurrent appends share fsyncs.
func (lg Log) Append(table uint64, part uint32, recs []arrow.RecordBatch) (uint64, error) {
	return lg.appendLog(table, part, recs, nil, nil)
}

func (lg Log) appendLog(table uint64, part uint32, recs []arrow.RecordBatch, key, val []byte) (uint64, error) {
	blocks := make([][]byte, 0, len(recs))
	for _, r := range recs {
		if r.NumRows() == 0 {
			continue
		}
		v, err := EncodeBlock(r)
		if err != nil {
			return 0, err
		}
		blocks = append(blocks, v)
	}
	pl, err := lg.partition(table, part)
	if err != nil {
		return 0, err
	}
	b := lg.db.pdb.NewBatch()
	pl.mu.Lock()
	first := pl.next
	off := first
	for _, v := range blocks {
		b.Set(logBlockKey(table, part, off), v, nil)
		off += blockRows(v)
	}
	if key != nil {
		b.Set(key, val, nil)
	}
	if err := lg.db.pdb.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		pl.mu.Unlock()
		return 0, sqlerr.Wrap(sqlerr.IOError, err)
	}
	pl.advance(off)
	pl.mu.Unlock()
	err = b.SyncWait()
	b.Close()
	if err != nil {
		return 0, sqlerr.Wrap(sqlerr.IOError, err)
	}
	return first, nil
}

// Bounds returns a partition's oldest retained offset, its end (next
// offset to be written), and a channel closed when the end moves.
func (lg Log) Bounds(table uint64, part uint32) (start, end uint64, changed <-chan struct{}, err error) {
	pl, err := lg.partition(table, part)
	if err != nil {
		return 0, 0, nil, err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.start, pl.next, pl.notify, nil
}

// Read calls fn with every block overlapping offsets [from, to), in
// order, sliced to that range; first is the offset of the block's first row.
// fn owns rec and must release it.
func (lg Log) Read(mem memory.Allocator, table uint64, part uint32, from, to uint64,
	fn func(first uint64, rec arrow.RecordBatch) error) error {
	return lg.ReadAt(nil, mem, table, part, from, to, fn)
}

// ReadAt is Log.Read through r (a statement's snapshot: the blocks
// appended before it; nil: the live database).
func (lg Log) ReadAt(r Reader, mem memory.Allocator, table uint64, part uint32, from, to uint64,
	fn func(first uint64, rec arrow.RecordBatch) error) error {
	if from >= to {
		return nil
	}
	if r == nil {
		r = lg.db.pdb
	}
	prefix := logPrefix(table, part)
	it, err := r.NewIter(&pebble.IterOptions{
		LowerBound: prefix,
		UpperBound: logBlockKey(table, part, to),
	})
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	defer it.Close()
	// The block holding `from` starts at or before it.
	ok := it.SeekLT(logBlockKey(table, part, from+1))
	if !ok {
		ok = it.First()
	}
	for ; ok; ok = it.Next() {
		off := binary.BigEndian.Uint64(it.Key()[len(prefix):])
		v, err := it.ValueAndErr()
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		n := blockRows(v)
		if off+n <= from {
			continue
		}
		if id, row, ok := refTarget(v); ok {
			if err := lg.db.Stages().read(r, mem, table, id, row, off, n, from, to, fn); err != nil {
				return err
			}
			continue
		}
		if err := emitBlock(mem, v, off, from, to, fn); err != nil {
			return err
		}
	}
	return nil
}

// emitBlock decodes block v, whose first row is at offset off, and calls fn
// with its rows in [from, to).
func emitBlock(mem memory.Allocator, v []byte, off, from, to uint64,
	fn func(first uint64, rec arrow.RecordBatch) error) error {
	rec, err := DecodeBlock(mem, v)
	if err != nil {
		return err
	}
	return emitRec(rec, off, from, to, fn)
}

// emitRec calls fn with the rows of rec, whose first row is at offset off,
// in [from, to). It owns rec.
func emitRec(rec arrow.RecordBatch, off, from, to uint64,
	fn func(first uint64, rec arrow.RecordBatch) error) error {
	n := uint64(rec.NumRows())
	lo, hi := uint64(0), n
	if off < from {
		lo = from - off
	}
	if off+n > to {
		hi = to - off
	}
	if lo != 0 || hi != n {
		s := rec.NewSlice(int64(lo), int64(hi))
		rec.Release()
		rec = s
	}
	return fn(off+lo, rec)
}

// Truncate deletes the blocks that lie wholly below offset `below`.
func (lg Log) Truncate(table uint64, part uint32, below uint64) error {
	pl, err := lg.partition(table, part)
	if err != nil {
		return err
	}
	prefix := logPrefix(table, part)
	it, err := lg.db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: logBlockKey(table, part, below+1)})
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	// Keep the block that contains `below`.
	cut := uint64(0)
	if it.SeekLT(logBlockKey(table, part, below+1)) {
		cut = binary.BigEndian.Uint64(it.Key()[len(prefix):])
	}
	it.Close()
	if cut == 0 {
		return nil
	}
	b := lg.db.pdb.NewBatch()
	b.DeleteRange(prefix, logBlockKey(table, part, cut), nil)
	// Reference blocks below the cut take their staged rows with them.
	rp := refPrefix(table, part)
	err = lg.db.scanPrefix(lg.db.pdb, rp, func(k, v []byte) error {
		if binary.BigEndian.Uint64(k[len(rp):]) >= cut {
			return errStopScan
		}
		id, row, n := binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), binary.BigEndian.Uint64(v[16:])
		b.DeleteRange(stageKey(table, id, row), stageKey(table, id, row+n), nil)
		return nil
	})
	if err != nil && err != errStopScan {
		return err
	}
	b.DeleteRange(rp, refKey(table, part, cut), nil)
	if err := lg.db.Commit(b, false); err != nil {
		return err
	}
	pl.mu.Lock()
	if cut > pl.start {
		pl.start = cut
	}
	pl.mu.Unlock()
	return nil
}

// OffsetAt returns the first offset of the oldest block of a partition
// written after t (at millisecond precision), or the log's end if no block
// is newer. Blocks
// are written in offset order, so their times ascend (up to the moments
// concurrent appends spend encoding) and a binary search finds it.
func (lg Log) OffsetAt(table uint64, part uint32, t time.Time) (uint64, error) {
	pl, err := lg.partition(table, part)
	if err != nil {
		return 0, err
	}
	pl.mu.Lock()
	lo, hi := pl.start, pl.next
	pl.mu.Unlock()
	prefix := logPrefix(table, part)
	it, err := lg.db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, sqlerr.Wrap(sqlerr.IOError, err)
	}
	defer it.Close()
	ms := t.UnixMilli()
	// Invariant: blocks ending at or before lo are older than t; the block
	// starting at hi (if any) is not. Both are block boundaries.
	for lo < hi {
		mid := lo + (hi-lo)/2
		if !it.SeekLT(logBlockKey(table, part, mid+1)) {
			break // truncated meanwhile
		}
		first := binary.BigEndian.Uint64(it.Key()[len(prefix):])
		v, err := it.ValueAndErr()
		if err != nil {
			return 0, sqlerr.Wrap(sqlerr.IOError, err)
		}
		if blockTime(v) > ms {
			hi = first
		} else {
			lo = first + blockRows(v)
		}
	}
	return lo, nil
}
