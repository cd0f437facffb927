// Package faultfs holds the storage engine's crash-simulating and
// fault-injecting filesystems, for tests above storage/ that crash or fail
// the database under a whole engine (sql's fault tests). The engine is
// Pebble and only storage/ names it (tests/lint TestOnlyStorageImportsPebble),
// so a change of engine changes this package, not those tests.
package faultfs

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/streamdb/streamdb/storage"
)

// MemFS is an in-memory filesystem that can be cloned as a crash would
// leave it (CrashClone).
type MemFS = vfs.MemFS

// CrashCloneCfg says how much unsynced data a crash clone keeps.
type CrashCloneCfg = vfs.CrashCloneCfg

// NewCrashableMem returns an empty in-memory filesystem that records which
// data is synced, for CrashClone.
func NewCrashableMem() *MemFS { return vfs.NewCrashableMem() }

// OS is the operating system's filesystem.
func OS() storage.FS { return vfs.Default }

// Op is one filesystem operation, as an Injector sees it.
type Op = errorfs.Op

// OpKind is the kind of an Op.
type OpKind = errorfs.OpKind

// Injector decides whether an operation fails.
type Injector = errorfs.Injector

// Toggle is an Injector that injects only while on.
type Toggle = errorfs.Toggle

// ErrInjected is the error an injected failure returns.
var ErrInjected = errorfs.ErrInjected

// Wrap returns fs with inj consulted before every operation.
func Wrap(fs storage.FS, inj Injector) storage.FS { return errorfs.Wrap(fs, inj) }

// The kinds of operation.
const (
	OpIsWrite         = errorfs.OpIsWrite
	OpCreate          = errorfs.OpCreate
	OpLink            = errorfs.OpLink
	OpRemove          = errorfs.OpRemove
	OpRemoveAll       = errorfs.OpRemoveAll
	OpRename          = errorfs.OpRename
	OpReuseForWrite   = errorfs.OpReuseForWrite
	OpMkdirAll        = errorfs.OpMkdirAll
	OpLock            = errorfs.OpLock
	OpFileClose       = errorfs.OpFileClose
	OpFileWrite       = errorfs.OpFileWrite
	OpFileWriteAt     = errorfs.OpFileWriteAt
	OpFileSync        = errorfs.OpFileSync
	OpFileSyncData    = errorfs.OpFileSyncData
	OpFileSyncTo      = errorfs.OpFileSyncTo
	OpFileFlush       = errorfs.OpFileFlush
	OpFilePreallocate = errorfs.OpFilePreallocate
)
