package storage

import (
	"encoding/binary"
	"encoding/json"

	"github.com/cockroachdb/pebble/v2"
	"github.com/streamdb/streamdb/sqlerr"
)

// SinkDef is a sink's catalog entry (CREATE SINK), under w/<name>. The
// sink's committed position in its view's changelog is an "o/" offset
// (job = the sink's ID, table = the view, partition 0), so log retention,
// checkpoints and savepoints carry it like a view job's source offset.
type SinkDef struct {
	ID      uint64
	Name    string
	View    string
	Options map[string]string
	Owner   string `json:",omitempty"`
}

func sinkKey(name string) []byte { return append([]byte("w/"), name...) }

// PutSink stores a sink's catalog entry in b.
func PutSink(b *pebble.Batch, d *SinkDef) {
	v, _ := json.Marshal(d)
	b.Set(sinkKey(d.Name), v, nil)
}

// DeleteSink removes a sink's catalog entry and its position in b.
func DeleteSink(b *pebble.Batch, d *SinkDef, view uint64) {
	b.Delete(sinkKey(d.Name), nil)
	b.Delete(offsetKey(d.ID, view, 0), nil)
}

// LoadSinks returns every sink's catalog entry.
func (db *DB) LoadSinks() ([]*SinkDef, error) {
	var out []*SinkDef
	err := db.scanPrefix(db.pdb, []byte("w/"), func(_, v []byte) error {
		d := &SinkDef{}
		if err := json.Unmarshal(v, d); err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "sink catalog entry: %v", err)
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

// PutSinkPosition records a sink's committed position in its view's
// changelog (not synced: the position the sink writes to Kafka is the
// truth; this one pins the changelog and travels in checkpoints).
func (db *DB) PutSinkPosition(sink, view uint64, pos uint64) error {
	b := db.pdb.NewBatch()
	defer b.Close()
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], pos)
	b.Set(offsetKey(sink, view, 0), v[:], nil)
	if err := b.Commit(pebble.NoSync); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}
