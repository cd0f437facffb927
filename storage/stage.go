package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/streamdb/streamdb/sqlerr"
)

// Staged appends (a COPY's rows): a Stage writes its blocks, as they are
// made, into sstables of its own key range and ingests them into Pebble, so
// the rows are durable without being held in memory and are written once,
// not through the WAL and the memtable. Nothing reads that range until
// Publish adds to the log, in one synced batch, reference blocks that stand
// for the staged rows at the next offsets of a partition. So all rows of a
// COPY become visible at once or not at all, offsets stay dense, and other
// appends to the partition wait only for that small batch.
//
//	p/<table:8><copy:8>                     a COPY in progress (removed by Publish and Abort)
//	z/<table:8><copy:8><row:8>              a staged block: the COPY's rows from row on
//	r/<table:8><partition:4><offset:8>      a published reference block: copy, first row, rows
//
// Staged blocks sort after every other key, so a staged sstable overlaps
// no table flushed from the memtable (whose keys all sort before z/) and
// Pebble ingests it into the bottom level, where no compaction rewrites it.
//
// A reference block is a log block whose header is followed by refMagic,
// the copy id and its first staged row instead of Arrow IPC. After a crash,
// Open removes the staged rows of every COPY still marked in progress and
// any sstable that was being written.

// stageFileBytes is the size of block data after which a stage's sstable is
// ingested and a new one begun: it bounds the data a crash leaves in the
// staging directory, not memory (an sstable is written as it goes).
var stageFileBytes int64 = 64 << 20

// stageDir is the directory, inside the database's, where stages write
// their sstables before ingesting them.
const stageDir = "copy-staging"

// refMagic marks a reference block; an IPC block starts with 0xFFFFFFFF.
var refMagic = [4]byte{'R', 'E', 'F', '1'}

const refBlockLen = blockHeader + 4 + 16

// maxRefRows is the most rows one reference block stands for (a block
// header's row count is 32 bits).
const maxRefRows = 1<<32 - 1

func stagePrefix(table, id uint64) []byte {
	k := make([]byte, 0, 26)
	k = append(k, "z/"...)
	k = binary.BigEndian.AppendUint64(k, table)
	return binary.BigEndian.AppendUint64(k, id)
}

func stageKey(table, id, row uint64) []byte {
	return binary.BigEndian.AppendUint64(stagePrefix(table, id), row)
}

func pendingKey(table, id uint64) []byte {
	k := append([]byte("p/"), idBytes(table)...)
	return append(k, idBytes(id)...)
}

func refPrefix(table uint64, part uint32) []byte {
	k := append([]byte("r/"), idBytes(table)...)
	return binary.BigEndian.AppendUint32(k, part)
}

func refKey(table uint64, part uint32, off uint64) []byte {
	return binary.BigEndian.AppendUint64(refPrefix(table, part), off)
}

// refTarget returns the copy and first staged row a reference block stands
// for, or ok false for a block of rows.
func refTarget(v []byte) (id, row uint64, ok bool) {
	if len(v) != refBlockLen || [4]byte(v[blockHeader:blockHeader+4]) != refMagic {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(v[blockHeader+4:]), binary.BigEndian.Uint64(v[blockHeader+12:]), true
}

// Stage is one staged append in progress. It is not safe for concurrent use.
type Stage struct {
	db        *DB
	table, id uint64
	rows      uint64   // rows staged so far
	blocks    []uint32 // rows of each staged block, in order
	w         *sstable.Writer
	path      string
	wbytes    int64
	buf       bytes.Buffer // the block being staged, reused: the writer copies it
	done      bool
}

// New begins a staged append to table. Its mark is durable before any
// staged data, so a crash can always find and remove what it left.
func (sg Stages) New(table uint64) (*Stage, error) {
	sg.db.stageMu.Lock()
	defer sg.db.stageMu.Unlock()
	if sg.db.stageNext == 0 {
		v, ok, err := sg.db.get([]byte("g/copy"))
		if err != nil {
			return nil, err
		}
		sg.db.stageNext = 1
		if ok {
			sg.db.stageNext = binary.BigEndian.Uint64(v)
		}
	}
	id := sg.db.stageNext
	b := sg.db.pdb.NewBatch()
	b.Set([]byte("g/copy"), idBytes(id+1), nil)
	b.Set(pendingKey(table, id), nil, nil)
	// Committed under stageMu so that g/copy is written in id order.
	if err := sg.db.Commit(b, true); err != nil {
		return nil, err
	}
	sg.db.stageNext = id + 1
	return &Stage{db: sg.db, table: table, id: id}, nil
}

// Rows is the number of rows staged so far.
func (s *Stage) Rows() uint64 { return s.rows }

// Add stages rec's rows after those staged before.
func (s *Stage) Add(rec arrow.RecordBatch) error {
	if s.done {
		return sqlerr.New(sqlerr.Internal, "stage already finished")
	}
	if rec.NumRows() == 0 {
		return nil
	}
	if err := encodeBlockTo(&s.buf, rec); err != nil {
		return err
	}
	v := s.buf.Bytes()
	if s.w == nil {
		if err := s.create(); err != nil {
			return err
		}
	}
	if err := s.w.Set(stageKey(s.table, s.id, s.rows), v); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	s.db.tail.put(s.table, s.id, s.rows, rec)
	n := blockRows(v)
	s.rows += n
	s.blocks = append(s.blocks, uint32(n))
	s.wbytes += int64(len(v))
	if s.wbytes >= stageFileBytes {
		return s.ingest()
	}
	return nil
}

func (s *Stage) create() error {
	fs := s.db.fs
	dir := fs.PathJoin(s.db.dir, stageDir)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	s.path = fs.PathJoin(dir, fmt.Sprintf("%d-%d-%d.sst", s.table, s.id, s.rows))
	f, err := fs.Create(s.path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	// Written back as it goes, as Pebble's own sstables are, so that the
	// sync when the COPY ends finds little left to write.
	f = vfs.NewSyncingFile(f, vfs.SyncingFileOptions{BytesPerSync: s.db.popts.BytesPerSync})
	// The row-oriented format: the columnar one copies each value into its
	// block several times, which for blocks of megabytes (a 100 MB row is
	// one) cost more than the rest of staging.
	o := s.db.popts.MakeWriterOptions(len(s.db.popts.Levels)-1, min(s.db.pdb.TableFormat(), sstable.TableFormatPebblev4))
	s.w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), o)
	s.wbytes = 0
	return nil
}

// ingest finishes the current sstable (which syncs it) and ingests it.
func (s *Stage) ingest() error {
	w, path := s.w, s.path
	s.w, s.path = nil, ""
	err := w.Close()
	if err == nil {
		err = s.db.pdb.Ingest(context.Background(), []string{path})
	}
	// Ingest links the file into the database; this name is not needed.
	_ = s.db.fs.Remove(path)
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}

// Publish makes every staged row visible, as the next offsets of one
// partition, in one synced write, and returns the first offset.
func (s *Stage) Publish(part uint32) (uint64, error) {
	if s.done {
		return 0, sqlerr.New(sqlerr.Internal, "stage already finished")
	}
	s.done = true
	if s.w != nil {
		if err := s.ingest(); err != nil {
			s.abort()
			return 0, err
		}
	}
	pl, err := s.db.Log().partition(s.table, part)
	if err != nil {
		s.abort()
		return 0, err
	}
	// Readers may find the blocks in memory from the moment the rows are
	// visible.
	s.db.tail.publish(s.table, s.id, part, s.blocks)
	b := s.db.pdb.NewBatch()
	defer b.Close()
	pl.mu.Lock()
	first := pl.next
	off := s.addRefs(b, part, first, nowMillis())
	if err := s.db.pdb.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		pl.mu.Unlock()
		s.abort()
		return 0, sqlerr.Wrap(sqlerr.IOError, err)
	}
	pl.advance(off)
	pl.mu.Unlock()
	if err := b.SyncWait(); err != nil {
		return 0, sqlerr.Wrap(sqlerr.IOError, err)
	}
	return first, nil
}

// addRefs adds to b the deletion of the stage's mark and the reference
// blocks that stand for its rows at offsets from first of part, and
// returns the offset after them. The caller holds the partition's lock.
func (s *Stage) addRefs(b *pebble.Batch, part uint32, first uint64, now int64) uint64 {
	b.Delete(pendingKey(s.table, s.id), nil)
	off := first
	// One reference block per run of whole staged blocks that fits a
	// block header's row count.
	row, n := uint64(0), uint64(0)
	emit := func() {
		if n == 0 {
			return
		}
		v := make([]byte, refBlockLen)
		binary.BigEndian.PutUint32(v, uint32(n))
		binary.BigEndian.PutUint64(v[4:], uint64(now))
		copy(v[blockHeader:], refMagic[:])
		binary.BigEndian.PutUint64(v[blockHeader+4:], s.id)
		binary.BigEndian.PutUint64(v[blockHeader+12:], row)
		b.Set(logBlockKey(s.table, part, off), v, nil)
		r := make([]byte, 24)
		binary.BigEndian.PutUint64(r, s.id)
		binary.BigEndian.PutUint64(r[8:], row)
		binary.BigEndian.PutUint64(r[16:], n)
		b.Set(refKey(s.table, part, off), r, nil)
		off += n
		row += n
		n = 0
	}
	for _, k := range s.blocks {
		if n+uint64(k) > maxRefRows {
			emit()
		}
		n += uint64(k)
	}
	emit()
	return off
}

// Abort removes everything the stage wrote. It may be called after
// Publish, and then does nothing.
func (s *Stage) Abort() {
	if s.done {
		return
	}
	s.done = true
	s.abort()
}

func (s *Stage) abort() {
	s.db.tail.drop(s.table, s.id, s.blocks)
	if s.w != nil {
		_ = s.w.Close()
		_ = s.db.fs.Remove(s.path)
		s.w = nil
	}
	b := s.db.pdb.NewBatch()
	p := stagePrefix(s.table, s.id)
	b.DeleteRange(p, prefixEnd(p), nil)
	b.Delete(pendingKey(s.table, s.id), nil)
	// Not synced: if this is lost in a crash, the mark is still there and
	// Open removes the rows.
	_ = s.db.Commit(b, false)
	s.db.Stages().reclaim()
}

// reclaim starts a flush of the memtable that holds the deletion of
// a staged range: once the range tombstone is in a table, Pebble drops the
// staged sstables it covers whole (a delete-only compaction, no rewrite),
// instead of when a compaction happens to reach them.
func (sg Stages) reclaim() { _, _ = sg.db.pdb.AsyncFlush() }

// clean removes the staged rows of every COPY a crash interrupted and
// the staging directory's files; Open calls it.
func (sg Stages) clean() error {
	dir := sg.db.fs.PathJoin(sg.db.dir, stageDir)
	if err := sg.db.fs.RemoveAll(dir); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	b := sg.db.pdb.NewBatch()
	err := sg.db.scanPrefix(sg.db.pdb, []byte("p/"), func(k, _ []byte) error {
		if len(k) != 18 {
			return nil
		}
		p := stagePrefix(binary.BigEndian.Uint64(k[2:]), binary.BigEndian.Uint64(k[10:]))
		b.DeleteRange(p, prefixEnd(p), nil)
		b.Delete(k, nil)
		return nil
	})
	if err != nil || b.Empty() {
		return err
	}
	if err := sg.db.Commit(b, true); err != nil {
		return err
	}
	sg.reclaim()
	return nil
}

// Keys counts the keys of staged appends in progress and of staged
// rows (published or not); tests use it to see that aborts leave nothing.
func (sg Stages) Keys() (pending, staged int, err error) {
	err = sg.db.scanPrefix(sg.db.pdb, []byte("p/"), func(_, _ []byte) error { pending++; return nil })
	if err != nil {
		return
	}
	err = sg.db.scanPrefix(sg.db.pdb, []byte("z/"), func(_, _ []byte) error { staged++; return nil })
	return
}

// read calls fn, as Log.Read does, with the rows of offsets
// [from, to) of a reference block at offset off standing for n rows of copy
// id from staged row row on.
func (sg Stages) read(r Reader, mem memory.Allocator, table, id, row, off, n, from, to uint64,
	fn func(first uint64, rec arrow.RecordBatch) error) error {
	lo, hi := max(from, off)-off+row, min(to, off+n)-off+row // staged rows
	// Blocks a COPY has just published are in the tail cache; the first
	// that is not (or a read starting inside a block) is read from Pebble.
	for lo < hi {
		rec := sg.db.tail.get(table, id, lo, hi)
		if rec == nil {
			break
		}
		next := lo + uint64(rec.NumRows())
		if err := emitRec(rec, off+lo-row, off+lo-row, off+hi-row, fn); err != nil {
			return err
		}
		lo = next
	}
	if lo >= hi {
		return nil
	}
	prefix := stagePrefix(table, id)
	// Every block an iterator steps onto is loaded and decoded (a staged
	// block is about a megabyte), and the block cache keeps little of them
	// once Pebble's memtables have grown, since memtables reserve their
	// size from it. So the blocks are read forward from an exact seek, and
	// no step goes past the block holding the last row wanted. A read that
	// starts at a block's first row (a job reads block by block) loads
	// only its blocks; one that starts inside a block finds that block
	// with a reverse seek, which loads the block before it too.
	it, err := r.NewIter(&pebble.IterOptions{
		LowerBound: stageKey(table, id, row),
		UpperBound: stageKey(table, id, row+n),
	})
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	defer it.Close()
	more := true
	emit := func(it *pebble.Iterator) error {
		r := binary.BigEndian.Uint64(it.Key()[len(prefix):])
		v, err := it.ValueAndErr()
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		more = r+blockRows(v) < hi
		sg.db.tail.miss()
		// Staged row r is offset off + r - row.
		return emitBlock(mem, v, off+r-row, off+lo-row, off+hi-row, fn)
	}
	ok := it.SeekGE(stageKey(table, id, lo))
	if !ok || binary.BigEndian.Uint64(it.Key()[len(prefix):]) != lo {
		// lo is inside the block before the one it is on (or the last).
		before, err := r.NewIter(&pebble.IterOptions{
			LowerBound: stageKey(table, id, row),
			UpperBound: stageKey(table, id, lo+1),
		})
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		if before.Last() {
			err = emit(before)
		}
		if err == nil {
			err = before.Error()
		}
		before.Close()
		if err != nil {
			return err
		}
	}
	for ok && more {
		if err := emit(it); err != nil {
			return err
		}
		if more {
			ok = it.Next()
		}
	}
	return it.Error()
}
