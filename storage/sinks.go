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

// DeleteSink removes a sink's catalog entry, its position and its
// prepared commit in b.
func DeleteSink(b *pebble.Batch, d *SinkDef, view uint64) {
	b.Delete(sinkKey(d.Name), nil)
	b.Delete(offsetKey(d.ID, view, 0), nil)
	b.Delete(sinkCommitKey(d.ID), nil)
}

// SinkCommit is what a checkpoint stores for an exactly-once sink at its
// barrier (connector.TwoPhaseSink): the transaction the sink commits once the
// checkpoint is durable. It carries the view's changes [From, To) — or,
// Snapshot, the view's rows at changelog position To — of the sink's
// generation Gen. Recovery reads it back (Positions.SinkCommit): the changes up
// to To are durable, so what the external system lacks of them is
// committed again; anything past To was never committed and is aborted.
type SinkCommit struct {
	Checkpoint uint64
	Gen        string `json:",omitempty"`
	From, To   uint64
	Snapshot   bool `json:",omitempty"`
}

func sinkCommitKey(sink uint64) []byte { return binary.BigEndian.AppendUint64([]byte("b/"), sink) }

// PutSinkCommit adds a sink's prepared commit to b, which the checkpoint
// commits (synced) with the checkpoint record, and the sink's position in
// view's changelog, which keeps retention from dropping what it will send
// (From; a snapshot's changes start at To).
func (b *Batch) PutSinkCommit(sink, view uint64, c SinkCommit) {
	v, _ := json.Marshal(c)
	pin := c.From
	if c.Snapshot {
		pin = c.To
	}
	b.mu.Lock()
	b.b.Set(sinkCommitKey(sink), v, nil)
	b.b.Set(offsetKey(sink, view, 0), binary.BigEndian.AppendUint64(nil, pin), nil)
	b.mu.Unlock()
}

// SinkCommit returns the sink's commit the last durable checkpoint
// stored (ok false: none).
func (ps Positions) SinkCommit(sink uint64) (c SinkCommit, ok bool, err error) {
	v, ok, err := ps.db.get(sinkCommitKey(sink))
	if err != nil || !ok {
		return c, false, err
	}
	if err := json.Unmarshal(v, &c); err != nil {
		return c, false, sqlerr.New(sqlerr.DataCorrupted, "sink %d: prepared commit: %v", sink, err)
	}
	return c, true, nil
}

// LoadSinks returns every sink's catalog entry.
func (cs Catalog) LoadSinks() ([]*SinkDef, error) {
	var out []*SinkDef
	err := cs.db.scanPrefix(cs.db.pdb, []byte("w/"), func(_, v []byte) error {
		d := &SinkDef{}
		if err := json.Unmarshal(v, d); err != nil {
			return sqlerr.New(sqlerr.DataCorrupted, "sink catalog entry: %v", err)
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

// PutSink records a sink's committed position in its view's
// changelog (not synced: the position the sink writes to Kafka and the
// sink's prepared commit are the truth; this one pins the changelog).
func (ps Positions) PutSink(sink, view uint64, pos uint64) error {
	b := ps.db.pdb.NewBatch()
	defer b.Close()
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], pos)
	b.Set(offsetKey(sink, view, 0), v[:], nil)
	if err := b.Commit(pebble.NoSync); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}
