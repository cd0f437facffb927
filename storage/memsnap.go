package storage

// Snapshot files of the memory state backend: a job's state entries, one
// Arrow IPC file per operator and range of 16 key groups (an entry's first
// key byte is its key group), each file a sequence of record batches of two
// binary columns, key and value, in key order. The pointer (x/<job>) lists
// the files with their sizes and SHA-256; a file that is missing or does
// not match is refused with XX001.
//
// WriteStateFile and ReadStateFile do the encoding on an io.Writer / from
// bytes, apart from where the files live, so a checkpoint store can carry
// them elsewhere.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/RaduBerinde/btreemap"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/streamdb/streamdb/sqlerr"
)

// KeyGroupsPerFile is the width of a snapshot file's key group range.
const KeyGroupsPerFile = 16

// memStateDir is the data directory's subdirectory of memory snapshots.
const memStateDir = "memstate"

// memPointer is a job's committed memory snapshot.
type memPointer struct {
	// Epoch numbers the job's snapshots: one more than the newest
	// snapshot directory of the job when it was written.
	Epoch uint64
	Dir   string // relative to the data directory
	Files []StateFile
}

// StateFile describes one snapshot file.
type StateFile struct {
	Name       string
	Op         uint32
	KGLo, KGHi int // key groups [KGLo, KGHi]
	Rows       int64
	Bytes      int64
	SHA256     string
}

var stateSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.BinaryTypes.Binary},
	{Name: "value", Type: arrow.BinaryTypes.Binary},
}, nil)

// StateEntry is one state entry.
type StateEntry struct{ Key, Val []byte }

// WriteStateFile writes entries (in key order) to w as an Arrow IPC file
// in batches of at most 4 MB of keys and values.
func WriteStateFile(w io.Writer, next func() (StateEntry, bool)) (rows int64, err error) {
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(stateSchema), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return 0, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, stateSchema)
	defer b.Release()
	kb, vb := b.Field(0).(*array.BinaryBuilder), b.Field(1).(*array.BinaryBuilder)
	size := 0
	flush := func() error {
		if kb.Len() == 0 {
			return nil
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		size = 0
		return fw.Write(rec)
	}
	for {
		e, ok := next()
		if !ok {
			break
		}
		kb.Append(e.Key)
		vb.Append(e.Val)
		rows++
		if size += len(e.Key) + len(e.Val); size >= 4<<20 {
			if err := flush(); err != nil {
				return rows, err
			}
		}
	}
	if err := flush(); err != nil {
		return rows, err
	}
	return rows, fw.Close()
}

// ReadStateFile calls fn with every entry of an encoded state file.
func ReadStateFile(data []byte, fn func(key, val []byte) error) error {
	fr, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return sqlerr.New(sqlerr.DataCorrupted, "state file: %v", err)
	}
	defer fr.Close()
	if !fr.Schema().Equal(stateSchema) {
		return sqlerr.New(sqlerr.DataCorrupted, "state file: unexpected schema %v", fr.Schema())
	}
	for i := 0; i < fr.NumRecords(); i++ {
		rec, err := fr.RecordBatch(i)
		if err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "state file: %v", err)
		}
		ks, vs := rec.Column(0).(*array.Binary), rec.Column(1).(*array.Binary)
		for r := 0; r < int(rec.NumRows()); r++ {
			if err := fn(ks.Value(r), vs.Value(r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeSnapshot writes m's entries and the operators' snapshots ops as
// the job's next snapshot and syncs them; it returns the pointer to commit.
// An operator with snapshots in ops is written from them alone.
func (ms Memory) writeSnapshot(job uint64, m *memState, ops []OpSnapshot) (*memPointer, error) {
	epoch := uint64(1)
	if names, err := ms.db.fs.List(ms.db.fs.PathJoin(ms.db.dir, memStateDir, fmt.Sprintf("%016x", job))); err == nil {
		for _, n := range names {
			var e uint64
			if _, err := fmt.Sscanf(n, "%x", &e); err == nil && len(n) == 16 {
				epoch = max(epoch, e+1)
			}
		}
	}
	rel := ms.db.fs.PathJoin(memStateDir, fmt.Sprintf("%016x", job), fmt.Sprintf("%016x", epoch))
	dir := ms.db.fs.PathJoin(ms.db.dir, rel)
	if err := ms.db.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	p := &memPointer{Epoch: epoch, Dir: rel}
	m.mu.RLock()
	defer m.mu.RUnlock()
	own := opsOf(ops)
	ids := make([]uint32, 0, len(m.ops)+len(own))
	for op := range m.ops {
		if own[op] == nil {
			ids = append(ids, op)
		}
	}
	for op := range own {
		ids = append(ids, op)
	}
	slices.Sort(ids)
	for _, op := range ids {
		t := m.ops[op]
		for lo := 0; lo < 256; lo += KeyGroupsPerFile {
			var next func() (StateEntry, bool)
			stop := func() {}
			if snaps := own[op]; snaps != nil {
				var ok bool
				if next, ok = mergeRange(snaps, lo, lo+KeyGroupsPerFile); !ok {
					continue
				}
			} else {
				from := btreemap.GE(string([]byte{byte(lo)}))
				to := btreemap.Max[string]()
				if lo+KeyGroupsPerFile < 256 {
					to = btreemap.LT(string([]byte{byte(lo + KeyGroupsPerFile)}))
				}
				if _, _, ok := peekFirst(t, from, to); !ok {
					continue
				}
				next, stop = iterPull(t, from, to)
			}
			sf := StateFile{Name: fmt.Sprintf("op%d-kg%d-%d.arrow", op, lo, lo+KeyGroupsPerFile-1), Op: op,
				KGLo: lo, KGHi: lo + KeyGroupsPerFile - 1}
			err := ms.writeSynced(ms.db.fs.PathJoin(dir, sf.Name), func(w io.Writer) error {
				var err error
				sf.Rows, err = WriteStateFile(w, next)
				return err
			}, &sf)
			stop()
			if err != nil {
				return nil, err
			}
			p.Files = append(p.Files, sf)
		}
	}
	if d, err := ms.db.fs.OpenDir(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return nil, sqlerr.Wrap(sqlerr.IOError, err)
		}
	}
	return p, nil
}

// opsOf groups operators' snapshots by operator.
func opsOf(ops []OpSnapshot) map[uint32][]OpSnapshot {
	out := map[uint32][]OpSnapshot{}
	for _, s := range ops {
		out[s.Op()] = append(out[s.Op()], s)
	}
	return out
}

// mergeRange returns the entries of snaps (each in key order, the
// instances of one operator) whose key group is in [lo, hi), merged in key
// order; false if there are none.
func mergeRange(snaps []OpSnapshot, lo, hi int) (func() (StateEntry, bool), bool) {
	type cursor struct {
		s      OpSnapshot
		i, end int
	}
	var cs []cursor
	for _, s := range snaps {
		n := s.Len()
		first := func(kg int) int {
			return sort.Search(n, func(i int) bool {
				k, _ := s.Entry(i)
				return len(k) > 0 && int(k[0]) >= kg
			})
		}
		if c := (cursor{s: s, i: first(lo), end: first(hi)}); c.i < c.end {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil, false
	}
	return func() (StateEntry, bool) {
		best := -1
		var bk []byte
		for i := range cs {
			if cs[i].i >= cs[i].end {
				continue
			}
			if k, _ := cs[i].s.Entry(cs[i].i); best < 0 || bytes.Compare(k, bk) < 0 {
				best, bk = i, k
			}
		}
		if best < 0 {
			return StateEntry{}, false
		}
		k, v := cs[best].s.Entry(cs[best].i)
		cs[best].i++
		return StateEntry{Key: k, Val: v}, true
	}, true
}

func peekFirst(t *btreemap.BTreeMap[string, []byte], from btreemap.LowerBound[string], to btreemap.UpperBound[string]) (string, []byte, bool) {
	for k, v := range t.Ascend(from, to) {
		return k, v, true
	}
	return "", nil, false
}

// iterPull returns the entries of t in [from, to) one at a time.
func iterPull(t *btreemap.BTreeMap[string, []byte], from btreemap.LowerBound[string], to btreemap.UpperBound[string]) (func() (StateEntry, bool), func()) {
	var kb []byte
	next, stop := iter.Pull2(t.Ascend(from, to))
	return func() (StateEntry, bool) {
		k, v, ok := next()
		if !ok {
			return StateEntry{}, false
		}
		kb = append(kb[:0], k...)
		return StateEntry{Key: kb, Val: v}, true
	}, stop
}

// writeSynced creates path, writes it through fn, syncs it, and records
// its size and checksum in sf.
func (ms Memory) writeSynced(path string, fn func(io.Writer) error, sf *StateFile) error {
	f, err := ms.db.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	h := sha256.New()
	// A file may change a buffer it was given once it has written it
	// (Pebble's MemFS does in race builds, to catch callers that reuse
	// one), and Arrow's IPC writer writes package-level bytes (its magic,
	// its padding): so the hash sees each write first, and small writes go
	// through a buffer of our own.
	bw := bufio.NewWriterSize(f, 64<<10)
	cw := &countWriter{w: io.MultiWriter(h, bw)}
	err = fn(cw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	sf.Bytes, sf.SHA256 = cw.n, hex.EncodeToString(h.Sum(nil))
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// readSnapshot verifies and reads the files of p, calling fn with every
// entry (key and val are only valid during the call).
func (ms Memory) readSnapshot(job uint64, p *memPointer, fn func(op uint32, key, val []byte)) error {
	fsys := ms.db.fs
	if fsys == nil { // a read-only snapshot database
		fsys = vfs.Default
	}
	for _, sf := range p.Files {
		path := fsys.PathJoin(ms.db.dir, p.Dir, sf.Name)
		f, err := fsys.Open(path)
		if err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "memory state snapshot of job %d: file %s is missing: %v", job, sf.Name, err)
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != sf.Bytes || hex.EncodeToString(sum[:]) != sf.SHA256 {
			return sqlerr.New(sqlerr.DataCorrupted, "memory state snapshot of job %d: file %s does not match its checksum", job, sf.Name)
		}
		err = ReadStateFile(data, func(k, v []byte) error {
			if len(k) == 0 || int(k[0]) < sf.KGLo || int(k[0]) > sf.KGHi {
				return sqlerr.New(sqlerr.DataCorrupted, "memory state snapshot of job %d: key outside the file's key groups", job)
			}
			fn(sf.Op, k, v)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// removeSnapshots removes job's snapshot directories older than keep's
// but the newest of them (a commit of keep's pointer that was not synced
// may be lost with the machine, and its predecessor is then the job's);
// newer ones may be being written. keep nil removes them all.
func (ms Memory) removeSnapshots(job uint64, keep *memPointer) {
	jdir := ms.db.fs.PathJoin(ms.db.dir, memStateDir, fmt.Sprintf("%016x", job))
	names, err := ms.db.fs.List(jdir)
	if err != nil {
		return
	}
	slices.Sort(names)
	cur := ""
	if keep != nil {
		cur = fmt.Sprintf("%016x", keep.Epoch)
	}
	prev := ""
	for _, n := range names {
		if cur != "" && strings.Compare(n, cur) < 0 {
			prev = n
		}
	}
	for _, n := range names {
		if n == cur || n == prev || cur != "" && n > cur {
			continue
		}
		_ = ms.db.fs.RemoveAll(ms.db.fs.PathJoin(jdir, n))
	}
	if keep == nil {
		_ = ms.db.fs.RemoveAll(jdir)
	}
}

// pointers returns every job's committed snapshot pointer.
func (ms Memory) pointers() (map[uint64]*memPointer, error) {
	out := map[uint64]*memPointer{}
	err := ms.db.scanPrefix(ms.db.pdb, []byte("x/"), func(k, v []byte) error {
		if len(k) != 10 {
			return nil
		}
		var p memPointer
		if err := json.Unmarshal(v, &p); err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "memory state pointer %x: %v", k, err)
		}
		out[binary.BigEndian.Uint64(k[2:])] = &p
		return nil
	})
	return out, err
}

// SnapshotBytes is the size of the memory-backend jobs' committed
// snapshot files (what a checkpoint of their state holds).
func (ms Memory) SnapshotBytes() int64 {
	ps, err := ms.pointers()
	if err != nil {
		return 0
	}
	var n int64
	for _, p := range ps {
		for _, f := range p.Files {
			n += f.Bytes
		}
	}
	return n
}

// LinkSnapshots puts the snapshot files of every committed pointer
// into dst (the data directory of a Pebble checkpoint taken at the same
// cut), at the same relative paths, so the checkpoint is a self-contained
// data directory: opened, downloaded or restored, its pointers find their
// files. Files are hard-linked (they are never modified), else copied.
// It must run at the cut, before a later commit may remove them.
func (ms Memory) LinkSnapshots(dst string) error {
	ps, err := ms.pointers()
	if err != nil {
		return err
	}
	for job, p := range ps {
		to := filepath.Join(dst, filepath.FromSlash(p.Dir))
		if err := os.MkdirAll(to, 0o755); err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		for _, f := range p.Files {
			src := filepath.Join(ms.db.dir, filepath.FromSlash(p.Dir), f.Name)
			dp := filepath.Join(to, f.Name)
			if err := os.Link(src, dp); err == nil {
				continue
			}
			if err := copyFile(src, dp); err != nil {
				return sqlerr.New(sqlerr.DataCorrupted, "memory state snapshot of job %d: file %s: %v", job, f.Name, err)
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// MaterializeSnapshot adds to b the state entries of job src's memory
// snapshot in from (a checkpoint's database, whose files it holds) as job
// dst's s/ range, after checking every file (XX001 if one is missing or
// altered). The canonical form, as a savepoint holds it: the job loads it
// on either backend. It reports whether from had a snapshot of src.
func (ms Memory) MaterializeSnapshot(b *pebble.Batch, from *DB, src, dst uint64) (bool, error) {
	p, err := from.Memory().loadPointer(src)
	if err != nil || p == nil {
		return false, err
	}
	// What the checkpoint's s/ range held of the job is replaced (a
	// savepoint round leaves the same entries there).
	start := binary.BigEndian.AppendUint64([]byte("s/"), dst)
	if err := b.DeleteRange(start, prefixEnd(start), nil); err != nil {
		return false, sqlerr.Wrap(sqlerr.IOError, err)
	}
	var setErr error
	err = from.Memory().readSnapshot(src, p, func(op uint32, key, val []byte) {
		if setErr == nil {
			setErr = b.Set(stateKey(dst, op, key), val, nil)
		}
	})
	if err == nil {
		err = setErr
	}
	return true, err
}

// removeSnapshotsAfter removes job's snapshot directories newer than
// p's (all of them if p is nil and the job has no committed snapshot):
// written, never committed. Only while no snapshot of the job is written.
func (ms Memory) removeSnapshotsAfter(job uint64, p *memPointer) {
	jdir := ms.db.fs.PathJoin(ms.db.dir, memStateDir, fmt.Sprintf("%016x", job))
	names, err := ms.db.fs.List(jdir)
	if err != nil {
		return
	}
	cur := ""
	if p != nil {
		cur = fmt.Sprintf("%016x", p.Epoch)
	}
	for _, n := range names {
		if n > cur {
			_ = ms.db.fs.RemoveAll(ms.db.fs.PathJoin(jdir, n))
		}
	}
}
