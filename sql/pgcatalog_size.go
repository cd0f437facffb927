package sql

import (
	"encoding/binary"
	"strconv"

	"github.com/streamdb/streamdb/storage"
)

// Relation sizes for pg_relation_size, pg_table_size and
// pg_total_relation_size (psql's \dt+ and \dm+): Pebble's estimate of the
// bytes on disk of the relation's key ranges. A stream's is its log
// (every partition); a materialized view's relation size is its rows, and
// its table size adds its job's operator state (on disk, plus the map of
// a job on the memory backend). Plain views, sources and system tables
// hold no bytes (0). Writes still in Pebble's memtable count once flushed.

// idRangeUsage is Pebble's disk usage estimate of the keys that start
// with prefix and the big-endian id (ids never reach 2^64-1).
func (e catalogSource) idRangeUsage(prefix string, id uint64) int64 {
	lo := binary.BigEndian.AppendUint64([]byte(prefix), id)
	hi := binary.BigEndian.AppendUint64([]byte(prefix), id+1)
	u, err := e.db.EstimateDiskUsage(lo, hi)
	if err != nil {
		return 0
	}
	return int64(u)
}

// relationSizes returns, by relation oid, the relation's own bytes (main:
// pg_relation_size) or its bytes with its job state (pg_table_size and
// pg_total_relation_size: streamdb has no indexes or TOAST), as decimal
// text (the PgLookup form).
func (e catalogSource) relationSizes(withState bool) map[int64]string {
	out := map[int64]string{}
	for _, r := range e.relations() {
		var n int64
		switch r.def.Kind {
		case storage.KindStream:
			n = e.idRangeUsage("l/", r.def.ID)
		case storage.KindView:
			n = e.idRangeUsage("v/", r.def.ID)
			if withState {
				n += e.idRangeUsage("s/", r.def.ID) + e.db.Memory().Bytes(r.def.ID)
			}
		}
		out[r.oid] = strconv.FormatInt(n, 10)
	}
	return out
}
