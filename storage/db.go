// Package storage is streamdb's one Pebble database: the catalog, every
// stream's durable partitioned log, operator state, view rows, settings and
// checkpoint records. Only this package (and storage/faultfs, its test
// filesystems) imports Pebble; operators reach their state through
// StateTable. DB keeps the engine's plumbing and reaches each concern
// through a type of its own (facets.go): db.Log(), db.State(), db.Memory(),
// db.Stages(), db.Epochs(), db.Views(), db.Positions(), db.Errors(),
// db.Catalog().
//
// Key layout (all integers big-endian so keys sort numerically):
//
//	c/<name>                              catalog entry (JSON TableDef)
//	g/seq                                 next object id
//	l/<table:8><partition:4><offset:8>    a log block: the rows from offset on (Arrow IPC)
//	s/<job:8><op:4><key...>               operator state
//	v/<view:8><key...>                    a view's rows (an aggregate's: key group byte, then group key)
//	o/<job:8><table:8><partition:4>       a job's committed source offset
//	k/<checkpoint:8>                      checkpoint record (JSON)
//	m/<name>                              a database setting
//	x/cut                                 the cut of the last committed epoch (cut.go)
//	u/<name>                              a role (JSON RoleDef)
//	a/mock_auth_nonce                     the secret of mock authentication
//	g/copy                                next staged-append (COPY) id
//	p/, r/, z/                            staged appends (stage.go)
//
// Durability: every commit that acknowledges user data is synced. Writes
// become visible in WAL order, and a synced write makes every earlier write
// durable, so a checkpoint that covers some rows also makes them durable.
package storage

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/streamdb/streamdb/sqlerr"
)

// DB is the database. It is safe for concurrent use.
type DB struct {
	pdb   *pebble.DB
	dir   string
	fs    vfs.FS
	popts *pebble.Options // as Open completed them: sstable writer options for stages

	tail      *tailCache // just-staged COPY blocks for the jobs reading them
	stageMu   sync.Mutex // serialises the allocation of stage ids
	stageNext uint64     // next stage id; 0: not read from g/copy yet

	mu struct {
		sync.Mutex
		nextID uint64
		logs   map[logKey]*partitionLog
	}
	// cuts holds the partitions that carry barrier marks (cut.go).
	cuts struct {
		sync.Mutex
		marked    map[*partitionLog]bool
		committed Cut // the last committed cut (loaded: read from x/cut)
		loaded    bool
		commit    chan struct{} // closed when the next cut commits
	}
	// reads holds the read points of the last rounds (readpoint.go).
	reads struct {
		sync.Mutex
		p readPoints
	}
	// appendsMu keeps a barrier cut from falling inside a transaction's
	// appends to several partitions (CommitAppends holds it shared,
	// MarkCut exclusively).
	// mem holds the state of jobs on the memory backend (memstate.go).
	memMu sync.RWMutex
	mem   map[uint64]*memState

	appendsMu sync.RWMutex
}

// Options configures Open.
type Options struct {
	// FS is the filesystem (nil: the OS). Tests pass a crash-simulating one.
	FS vfs.FS
	// CacheBytes is Pebble's block cache size (0: 64 MiB).
	CacheBytes int64
	// MemTableBytes is the size of one of Pebble's memtables (0: 64 MiB);
	// at most four are held before writes stop.
	MemTableBytes int64
	// Logger receives Pebble's own log lines (nil: they are dropped).
	Logger *slog.Logger
	// TailCacheBytes bounds the records of just-staged COPY blocks kept in
	// memory for the jobs reading them (0: 32 MiB; negative: none).
	TailCacheBytes int64
}

// Open opens or creates the database in dir.
func Open(dir string, o Options) (*DB, error) {
	cacheBytes := o.CacheBytes
	if cacheBytes == 0 {
		cacheBytes = 64 << 20
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	memTable := o.MemTableBytes
	if memTable == 0 {
		memTable = 64 << 20
	}
	// L0StopWritesThreshold: epochs of changes to keys spread by key group
	// make every flushed table overlap the whole state, so L0 deepens while
	// the one compaction thread catches up; at Pebble's usual 12–24
	// sublevels a commit then stalls for seconds (steady-state CHECKPOINTs
	// of 0.1 s took 3–5 s now and then at 10M keys). 64 leaves room for
	// those bursts and still stops runaway growth (CockroachDB, relying on
	// admission control instead, uses 1000). MaxManifestFileSize keeps
	// the MANIFEST that each retained-checkpoint export copies small.
	fs := o.FS
	if fs == nil && os.Getenv("STREAMDB_LOSE_UNSYNCED_WAL") == "1" {
		fs = loseUnsyncedWAL(vfs.Default) // crash tests only
	}
	popts := &pebble.Options{
		FS:                          fs,
		Cache:                       cache,
		MemTableSize:                uint64(memTable),
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       64,
		MaxManifestFileSize:         4 << 20,
		Cleaner:                     deleteNoRecycle{},
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      pebbleLogger(o.Logger),
	}
	// A second compaction may run when L0's read amplification or the
	// compaction debt passes Pebble's thresholds: with one, a join's or
	// rank's state written every epoch under load left L0 deep, and every
	// read-back of an evicted group paid a seek in each sublevel (Nexmark q9
	// at 5M events: a third of the CPU in those seeks).
	popts.CompactionConcurrencyRange = func() (int, int) { return 1, 2 }
	// Bloom filters on every level (10 bits a key, about 1 % false
	// positives): a point read of a key that is not there (a join's new row
	// checked against the stored count, a view row or an index entry read
	// back) skips a table without reading its index and data blocks.
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	sched := newOpeningScheduler()
	popts.Experimental.CompactionScheduler = sched
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, fmt.Errorf("open %s: %w", dir, err))
	}
	sched.opened()
	wopts := popts.Clone()
	wopts.EnsureDefaults()
	tailBytes := o.TailCacheBytes
	if tailBytes == 0 {
		tailBytes = 32 << 20
	}
	db := &DB{pdb: pdb, dir: dir, fs: wopts.FS, popts: wopts, tail: newTailCache(tailBytes)}
	db.mu.logs = make(map[logKey]*partitionLog)
	if err := db.Stages().clean(); err != nil {
		pdb.Close()
		return nil, err
	}
	if v, ok, err := db.get([]byte("g/seq")); err != nil {
		pdb.Close()
		return nil, err
	} else if ok {
		db.mu.nextID = binary.BigEndian.Uint64(v)
	} else {
		db.mu.nextID = 1
	}
	return db, nil
}

// deleteNoRecycle deletes obsolete files (Clean is DeleteCleaner's, the
// shallower embedding) but carries ArchiveCleaner's marker that it needs
// their contents, which stops Pebble from recycling WAL files. A recycled
// WAL keeps the size of its largest previous use (an epoch batch can be
// 100+ MB), and each retained checkpoint export copies the live WAL whole:
// with recycling, exports at millions of keys copied hundreds of megabytes
// of stale log every time (docs/BENCHMARKS.md).
type deleteNoRecycle struct {
	pebble.DeleteCleaner
	needsContents
}

type needsContents struct{ pebble.ArchiveCleaner }

// Close closes the database cleanly.
func (db *DB) Close() error {
	db.Epochs().DropReadPoints()
	return db.pdb.Close()
}

// Dir is the directory the database lives in.
func (db *DB) Dir() string { return db.dir }

// pebbleLogger routes Pebble's log lines to log (nil: drops them).
func pebbleLogger(log *slog.Logger) pebble.Logger {
	if log == nil {
		return quietLogger{}
	}
	return slogPebble{log.With("component", "pebble")}
}

// slogPebble is a pebble.Logger over the server's slog logger. Pebble's
// Infof lines (flushes, compactions, WAL and file deletions) come at each
// flush and compaction, so they are Debug; Errorf is Error; Fatalf logs at
// Error and exits, as Pebble expects (it must not return, and state it
// found corrupt must not be used further).
type slogPebble struct{ log *slog.Logger }

func (l slogPebble) Infof(format string, args ...any) {
	l.log.Debug(strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (l slogPebble) Errorf(format string, args ...any) {
	l.log.Error(strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (l slogPebble) Fatalf(format string, args ...any) {
	l.log.Error("fatal: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
	os.Exit(1)
}

// quietLogger drops Pebble's lines (no logger given: tests, read-only opens).
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

func (db *DB) get(key []byte) ([]byte, bool, error) {
	v, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, sqlerr.Wrap(sqlerr.IOError, err)
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, true, nil
}

// NewID allocates an object id, durable with the next commit that writes b.
func (db *DB) NewID(b *pebble.Batch) uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	id := db.mu.nextID
	db.mu.nextID++
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], db.mu.nextID)
	b.Set([]byte("g/seq"), v[:], nil)
	return id
}

// NewBatch returns an empty write batch.
func (db *DB) NewBatch() *WriteBatch { return db.pdb.NewBatch() }

// Commit applies b; sync makes it durable before returning.
func (db *DB) Commit(b *pebble.Batch, sync bool) error {
	opts := pebble.NoSync
	if sync {
		opts = pebble.Sync
	}
	if err := db.pdb.Apply(b, opts); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}

// --- catalog ---

func catalogKey(name string) []byte { return append([]byte("c/"), name...) }

// Load returns every catalog entry.
func (cs Catalog) Load() ([]*TableDef, error) {
	var out []*TableDef
	err := cs.db.scanPrefix(cs.db.pdb, []byte("c/"), func(k, v []byte) error {
		t := new(TableDef)
		if err := json.Unmarshal(v, t); err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "catalog entry %q: %v", k, err)
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// PutTable adds the write of a catalog entry to b.
func PutTable(b *pebble.Batch, t *TableDef) {
	v, err := json.Marshal(t)
	if err != nil {
		panic(err) // TableDef always marshals
	}
	b.Set(catalogKey(t.Name), v, nil)
}

// DeleteTable adds the removal of a catalog entry and all its data to b.
func DeleteTable(b *pebble.Batch, t *TableDef) {
	b.Delete(catalogKey(t.Name), nil)
	id := idBytes(t.ID)
	// A COPY's p/ mark stays: if the COPY is still staging, it goes on
	// writing under z/ until it fails to publish and aborts, or a crash
	// leaves the mark for Open to clean up after.
	for _, p := range [][]byte{[]byte("l/"), []byte("v/"), []byte("i/"), []byte("z/"), []byte("r/")} {
		start := append(append([]byte(nil), p...), id...)
		b.DeleteRange(start, prefixEnd(start), nil)
	}
}

// --- roles ---

func roleKey(name string) []byte { return append([]byte("u/"), name...) }

// LoadRoles returns every role.
func (cs Catalog) LoadRoles() ([]*RoleDef, error) {
	var out []*RoleDef
	err := cs.db.scanPrefix(cs.db.pdb, []byte("u/"), func(k, v []byte) error {
		r := new(RoleDef)
		if err := json.Unmarshal(v, r); err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "role entry %q: %v", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// PutRole adds the write of a role to b.
func PutRole(b *pebble.Batch, r *RoleDef) {
	v, err := json.Marshal(r)
	if err != nil {
		panic(err) // RoleDef always marshals
	}
	b.Set(roleKey(r.Name), v, nil)
}

// DeleteRole adds the removal of a role to b.
func DeleteRole(b *pebble.Batch, name string) { b.Delete(roleKey(name), nil) }

// AuthSecret returns the database's secret for mock authentication (the
// fake SCRAM salt of a role that does not exist is derived from it, so it
// stays the same across restarts, as PostgreSQL's mock_auth_nonce does). It
// is made on first use.
func (cs Catalog) AuthSecret() ([]byte, error) {
	key := []byte("a/mock_auth_nonce")
	v, ok, err := cs.db.get(key)
	if err != nil || ok {
		return v, err
	}
	v = make([]byte, 32)
	rand.Read(v)
	b := cs.db.pdb.NewBatch()
	b.Set(key, v, nil)
	return v, cs.db.Commit(b, true)
}

// --- settings ---

// LoadSettings returns every stored database setting.
func (cs Catalog) LoadSettings() (map[string]string, error) {
	out := map[string]string{}
	err := cs.db.scanPrefix(cs.db.pdb, []byte("m/"), func(k, v []byte) error {
		out[string(k[2:])] = string(v)
		return nil
	})
	return out, err
}

// PutSetting durably stores (or with del, removes) a database setting.
func (cs Catalog) PutSetting(name, value string, del bool) error {
	b := cs.db.pdb.NewBatch()
	if del {
		b.Delete([]byte("m/"+name), nil)
	} else {
		b.Set([]byte("m/"+name), []byte(value), nil)
	}
	return cs.db.Commit(b, true)
}

// --- helpers ---

type reader interface {
	NewIter(*pebble.IterOptions) (*pebble.Iterator, error)
}

func (db *DB) scanPrefix(r reader, prefix []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}

func idBytes(id uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], id)
	return b[:]
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// Reader is a consistent read view: the live database or a snapshot.
type Reader interface {
	NewIter(*pebble.IterOptions) (*pebble.Iterator, error)
	Get(key []byte) ([]byte, io.Closer, error)
}

// Snapshot returns a consistent read view of the database; close it when done.
func (db *DB) Snapshot() Snapshot { return db.pdb.NewSnapshot() }

// OpenReadOnly opens a database (e.g. an exported snapshot) for reading only.
func OpenReadOnly(dir string) (*DB, error) {
	pdb, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: quietLogger{}, FormatMajorVersion: pebble.FormatNewest})
	if err != nil {
		return nil, err
	}
	db := &DB{pdb: pdb, dir: dir, tail: newTailCache(0)}
	db.mu.logs = make(map[logKey]*partitionLog)
	return db, nil
}

// CopyJob adds to b the replacement of job dst's state, offsets and view
// rows by those job src has in from (a snapshot), rewriting the job id.
func (st State) CopyJob(b *pebble.Batch, from *DB, src, dst uint64, views bool) error {
	DeleteJobData(b, dst)
	prefixes := []string{"s/", "o/"}
	if views {
		prefixes = append(prefixes, "v/", "i/")
	}
	for _, p := range prefixes {
		sp := append([]byte(p), idBytes(src)...)
		dp := append([]byte(p), idBytes(dst)...)
		if err := from.scanPrefix(from.pdb, sp, func(k, v []byte) error {
			nk := append(append([]byte(nil), dp...), k[len(sp):]...)
			return b.Set(nk, v, nil)
		}); err != nil {
			return err
		}
	}
	return nil
}

// CopyOffsets adds to b job dst's source offsets taken from job src in from.
func (st State) CopyOffsets(b *pebble.Batch, from *DB, src, dst uint64) error {
	sp := append([]byte("o/"), idBytes(src)...)
	dp := append([]byte("o/"), idBytes(dst)...)
	return from.scanPrefix(from.pdb, sp, func(k, v []byte) error {
		return b.Set(append(append([]byte(nil), dp...), k[len(sp):]...), v, nil)
	})
}

// flushThreshold is the memtable size above which a completed checkpoint
// starts a flush: what is flushed need not be replayed from the WAL after a
// crash, which bounds recovery time.
const flushThreshold = 32 << 20

// MaybeFlush starts flushing the memtables if they hold more than
// flushThreshold bytes; it does not wait.
func (db *DB) MaybeFlush() {
	if db.pdb.Metrics().MemTable.Size > flushThreshold {
		_, _ = db.pdb.AsyncFlush()
	}
}

// Composite types (CREATE TYPE name AS (...)): each kept under y/name as
// its types.EncodeType text.

// PutType adds the write of composite type name (its encoded type) to b.
func PutType(b *pebble.Batch, name, encoded string) {
	b.Set(append([]byte("y/"), name...), []byte(encoded), nil)
}

// DeleteType adds the removal of composite type name to b.
func DeleteType(b *pebble.Batch, name string) { b.Delete(append([]byte("y/"), name...), nil) }

// LoadTypes returns every composite type's encoded type by name.
func (cs Catalog) LoadTypes() (map[string]string, error) {
	out := map[string]string{}
	err := cs.db.scanPrefix(cs.db.pdb, []byte("y/"), func(k, v []byte) error {
		out[string(k[2:])] = string(v)
		return nil
	})
	return out, err
}
