package storage

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cockroachdb/pebble/v2"
	"github.com/streamdb/streamdb/sqlerr"
)

// A CDC source's position upstream (a PostgreSQL LSN) is stored with the
// log blocks that carry the changes up to it, in one synced batch: the
// log and the position never disagree, whatever moment the process dies.

func sourcePosKey(table uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("cdcpos/"), table)
}

// AppendAt is Log.Append that also records pos as the table's upstream
// position, atomically with the blocks (recs may be empty).
func (lg Log) AppendAt(table uint64, part uint32, recs []arrow.RecordBatch, pos uint64) (uint64, error) {
	return lg.appendLog(table, part, recs, sourcePosKey(table), binary.BigEndian.AppendUint64(nil, pos))
}

// Source returns the table's upstream position (ok false: none stored).
func (ps Positions) Source(table uint64) (uint64, bool, error) {
	v, ok, err := ps.db.get(sourcePosKey(table))
	if err != nil || !ok || len(v) != 8 {
		return 0, false, err
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// DeleteSource forgets the table's upstream position (either form).
func (ps Positions) DeleteSource(table uint64) error {
	for _, k := range [][]byte{sourcePosKey(table), sourcePosBytesKey(table)} {
		if err := ps.db.pdb.Delete(k, pebble.Sync); err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
	}
	return nil
}

// A source with several upstream positions (a Kafka changelog source:
// one offset per partition) stores them as one opaque value.
func sourcePosBytesKey(table uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("srcposb/"), table)
}

// AppendAtBytes is Log.AppendAt with an opaque position.
func (lg Log) AppendAtBytes(table uint64, part uint32, recs []arrow.RecordBatch, pos []byte) (uint64, error) {
	return lg.appendLog(table, part, recs, sourcePosBytesKey(table), pos)
}

// SourceBytes returns the table's opaque upstream position (nil: none).
func (ps Positions) SourceBytes(table uint64) ([]byte, error) {
	v, ok, err := ps.db.get(sourcePosBytesKey(table))
	if err != nil || !ok {
		return nil, err
	}
	return append([]byte(nil), v...), nil
}
