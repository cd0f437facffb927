package storage

import (
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// loseUnsyncedWAL wraps fs so that writes to Pebble's WAL files reach the
// disk only when the file is synced (or closed): a kill -9 then loses the
// unsynced tail of the WAL as a power loss does, where a plain kill -9
// leaves it in the OS's page cache. For crash tests of the real binary
// only: Open turns it on when STREAMDB_LOSE_UNSYNCED_WAL=1.
func loseUnsyncedWAL(fs vfs.FS) vfs.FS { return walLossFS{fs} }

type walLossFS struct{ vfs.FS }

func (fs walLossFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	return wrapWAL(name, f, err)
}

func (fs walLossFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	return wrapWAL(newname, f, err)
}

func wrapWAL(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &walLossFile{File: f}, nil
}

// walLossFile holds what was written since the last sync in memory.
type walLossFile struct {
	vfs.File
	mu      sync.Mutex
	pending []byte
}

func (f *walLossFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.pending = append(f.pending, p...)
	f.mu.Unlock()
	return len(p), nil
}

func (f *walLossFile) flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pending) == 0 {
		return nil
	}
	_, err := f.File.Write(f.pending)
	f.pending = f.pending[:0]
	return err
}

func (f *walLossFile) Sync() error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *walLossFile) SyncData() error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *walLossFile) SyncTo(length int64) (bool, error) {
	if err := f.flush(); err != nil {
		return false, err
	}
	return true, f.File.SyncData()
}

func (f *walLossFile) Close() error {
	err := f.flush()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}
