package storage

import (
	"context"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The storage engine is Pebble, and only this package imports it: the
// rest of streamdb names the engine's values through the types below and
// reaches the engine's maintenance (flush, on-disk checkpoints, disk
// usage, metrics) through DB's methods, so a change of engine or of its
// version is this package's change. The layering test (tests/lint) holds
// every other package to it.

// WriteBatch is an atomic group of writes, committed by DB.Commit.
type WriteBatch = pebble.Batch

// EngineMetrics are the storage engine's own counters (compactions,
// caches, levels), exported by /metrics.
type EngineMetrics = pebble.Metrics

// FS is the filesystem the database lives on; tests pass the engine's
// crash-simulating or fault-injecting filesystems.
type FS = vfs.FS

// Flush writes the memtable out to sstables.
func (db *DB) Flush() error { return db.pdb.Flush() }

// CheckpointTo writes a consistent, openable copy of the database to dir
// (hard links where it can), including the WAL flushed up to now.
func (db *DB) CheckpointTo(dir string) error {
	return db.pdb.Checkpoint(filepath.Clean(dir), pebble.WithFlushedWAL())
}

// Compact compacts the keys in [lo, hi) down the LSM tree and waits for
// it (benchmarks settle a bulk load with it).
func (db *DB) Compact(lo, hi []byte) error {
	return db.pdb.Compact(context.Background(), lo, hi, true)
}

// MemFS returns an empty in-memory filesystem (Options.FS) for tests.
func MemFS() FS { return vfs.NewMem() }

// EstimateDiskUsage estimates the bytes on disk of the keys in [lo, hi).
func (db *DB) EstimateDiskUsage(lo, hi []byte) (uint64, error) {
	return db.pdb.EstimateDiskUsage(lo, hi)
}

// EngineMetrics returns the storage engine's counters.
func (db *DB) EngineMetrics() *EngineMetrics { return db.pdb.Metrics() }

// Reader returns the live database as a read view (a read of it sees
// every committed write, not one instant).
func (db *DB) Reader() Reader { return db.pdb }
