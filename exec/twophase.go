package exec

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// The runtime's half of an exactly-once sink (the contract and the
// connector's half, connector.TwoPhaseSink, are in connector/sink.go): a
// SinkRunner prepares a sink's transaction at a checkpoint's barrier
// (PrepareCommit, called by checkpoint.Coordinator), has the connector
// write and commit it once that checkpoint is durable (CheckpointDurable),
// at most sinkTxnRows changelog rows each, and recovers after a crash or
// an error from what the connector finds in the external system and the
// last durable checkpoint's storage.SinkCommit. See
// docs/decisions/2026-12-06-sink-two-phase-commit.md.

// SinkStatus is what SHOW SINKS shows of a running sink.
type SinkStatus struct {
	State    string // RUNNING, RESTARTING, STOPPED
	Position uint64 // committed changelog position
	Sent     int64  // records committed since the server started
	LastErr  string
}

// sinkPhase is where a SinkRunner is.
type sinkPhase int

const (
	sinkRecovering    sinkPhase = iota // nothing to prepare
	sinkNeedsSnapshot                  // starts from a snapshot of the view
	sinkFollowing                      // sends the view's changes from pos
)

// preparedSnap is a snapshot of the view a checkpoint prepared.
type preparedSnap struct {
	checkpoint uint64
	snap       storage.Snapshot
	end        uint64
}

// SinkRunner runs a connector.TwoPhaseSink: it implements checkpoint.Committer for
// the checkpoint coordinator, and sends what durable checkpoints cover on
// its own goroutine, retrying (with the cause in its status) while the
// external system is unreachable.
type SinkRunner struct {
	db     *storage.DB
	name   string
	id     uint64 // the sink's id (storage.SinkDef.ID)
	view   *storage.TableDef
	gen    string
	conn   connector.TwoPhaseSink
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu struct {
		sync.Mutex
		phase   sinkPhase
		resync  bool
		pos     uint64 // committed in the external system
		durable uint64 // the end of the changes durable checkpoints cover
		// prepID and prepTo: the last checkpoint's prepared changes.
		prepID, prepTo uint64
		// snapPrep is a snapshot a checkpoint prepared; snapReady one
		// whose checkpoint is durable, to send.
		snapPrep, snapReady *preparedSnap
		status              SinkStatus
	}
}

// StartSinkRunner starts driving conn for sink def over view.
func StartSinkRunner(db *storage.DB, def *storage.SinkDef, view *storage.TableDef, conn connector.TwoPhaseSink) *SinkRunner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &SinkRunner{db: db, name: def.Name, id: def.ID, view: view, gen: def.Options[connector.SinkGenOption], conn: conn,
		cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	r.mu.status.State = "RUNNING"
	go r.run(ctx)
	return r
}

// Stop stops the sink and waits for it.
func (r *SinkRunner) Stop() {
	r.cancel()
	<-r.done
}

// Status returns the sink's state.
func (r *SinkRunner) Status() SinkStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.status
}

// PrepareCommit is phase one, at checkpoint's barrier: it adds to b the
// transaction the sink will commit once the checkpoint is durable. The
// coordinator calls it after every job acknowledged the barrier and
// before the round commits, so the view's changelog holds exactly the
// rounds committed before: all of them become durable with b.
func (r *SinkRunner) PrepareCommit(checkpoint uint64, b *storage.Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := storage.SinkCommit{Checkpoint: checkpoint, Gen: r.gen}
	switch r.mu.phase {
	case sinkRecovering:
		return
	case sinkNeedsSnapshot:
		if r.mu.snapReady != nil {
			return // the last one is being sent
		}
		r.releaseSnapLocked(&r.mu.snapPrep)
		snap, end, err := r.db.Views().Snapshot(r.view.ID)
		if err != nil {
			r.mu.status.LastErr = sqlerr.As(err).Msg
			return
		}
		r.mu.snapPrep = &preparedSnap{checkpoint: checkpoint, snap: snap, end: end}
		c.To, c.Snapshot = end, true
	case sinkFollowing:
		_, end, _, err := r.db.Log().Bounds(r.view.ID, 0)
		if err != nil || end <= r.mu.durable {
			return
		}
		r.mu.prepID, r.mu.prepTo = checkpoint, end
		c.From, c.To = r.mu.pos, end
	}
	b.PutSinkCommit(r.id, r.view.ID, c)
}

// CheckpointDurable is phase two: the checkpoint that stored the sink's
// transaction is synced, so the sink may commit it.
func (r *SinkRunner) CheckpointDurable(checkpoint uint64) {
	_ = plan.Failpoint(r.name, "sink_durable")
	r.mu.Lock()
	switch {
	case r.mu.snapPrep != nil && r.mu.snapPrep.checkpoint == checkpoint:
		r.mu.snapReady, r.mu.snapPrep = r.mu.snapPrep, nil
	case r.mu.prepID == checkpoint:
		r.mu.durable = max(r.mu.durable, r.mu.prepTo)
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// CheckpointAborted drops what the checkpoint prepared: the next
// checkpoint prepares its changes again.
func (r *SinkRunner) CheckpointAborted(checkpoint uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.snapPrep != nil && r.mu.snapPrep.checkpoint == checkpoint {
		r.releaseSnapLocked(&r.mu.snapPrep)
	}
	if r.mu.prepID == checkpoint {
		r.mu.prepID = 0
	}
}

func (r *SinkRunner) releaseSnapLocked(p **preparedSnap) {
	if *p != nil {
		(*p).snap.Close()
		*p = nil
	}
}

func (r *SinkRunner) run(ctx context.Context) {
	defer close(r.done)
	defer r.conn.Close()
	delay := 250 * time.Millisecond
	for ctx.Err() == nil {
		err := r.runOnce(ctx)
		if ctx.Err() != nil {
			break
		}
		se := sqlerr.As(err)
		r.mu.Lock()
		r.mu.status.State, r.mu.status.LastErr = "RESTARTING", se.Code+": "+se.Msg
		r.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
	r.mu.Lock()
	r.mu.phase = sinkRecovering
	r.releaseSnapLocked(&r.mu.snapPrep)
	r.releaseSnapLocked(&r.mu.snapReady)
	r.mu.status.State = "STOPPED"
	r.mu.Unlock()
}

// recover finds where the sink resumes: from the external system's last
// committed position, up to the end of the changes the last durable
// checkpoint's SinkCommit covers.
func (r *SinkRunner) recover(ctx context.Context) error {
	r.mu.Lock()
	r.mu.phase = sinkRecovering
	r.releaseSnapLocked(&r.mu.snapPrep)
	r.releaseSnapLocked(&r.mu.snapReady)
	r.mu.Unlock()
	pos, found, err := r.conn.Recover(ctx)
	if err != nil {
		return err
	}
	if err := plan.Failpoint(r.name, "sink_recover"); err != nil {
		return err
	}
	rec, ok, err := r.db.Positions().SinkCommit(r.id)
	if err != nil {
		return err
	}
	ok = ok && rec.Gen == r.gen
	if !found && !ok && r.gen == "" {
		// A sink from before two-phase commits: its stored position.
		if pos, found, err = r.db.State().LoadOffset(r.id, r.view.ID, 0); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case found && ok && !rec.Snapshot && rec.To < pos:
		return sqlerr.New(sqlerr.DataCorrupted, "sink %s: the topic holds changes up to position %d of %s, past the last durable checkpoint's %d",
			r.name, pos, r.view.Name, rec.To)
	case found:
		r.mu.phase, r.mu.pos, r.mu.durable = sinkFollowing, pos, pos
		if ok && !rec.Snapshot {
			r.mu.durable = rec.To
		}
	case ok && !rec.Snapshot:
		// The sink's transactions so far held no records.
		r.mu.phase, r.mu.pos, r.mu.durable = sinkFollowing, rec.From, rec.To
	default:
		// A new sink (or its snapshot not sent yet), or the first start
		// after RESTORE of its view: from a snapshot of the view (after
		// RESTORE, as compensating changes).
		r.mu.phase, r.mu.resync = sinkNeedsSnapshot, r.gen != ""
	}
	r.mu.status.Position, r.mu.status.State, r.mu.status.LastErr = r.mu.pos, "RUNNING", ""
	return nil
}

func (r *SinkRunner) runOnce(ctx context.Context) error {
	if err := r.recover(ctx); err != nil {
		return err
	}
	for {
		r.mu.Lock()
		snap, resync, pos, durable := r.mu.snapReady, r.mu.resync, r.mu.pos, r.mu.durable
		r.mu.Unlock()
		switch {
		case snap != nil:
			err := r.send(ctx, r.snapshotTxn(snap, resync))
			r.mu.Lock()
			r.releaseSnapLocked(&r.mu.snapReady)
			if err == nil {
				r.mu.phase, r.mu.durable = sinkFollowing, snap.end
			}
			r.mu.Unlock()
			if err != nil {
				return err
			}
		case pos < durable:
			to, err := r.txnEnd(pos, durable)
			if err != nil {
				return err
			}
			if err := r.send(ctx, r.changesTxn(pos, to)); err != nil {
				return err
			}
		default:
			select {
			case <-ctx.Done():
				return nil
			case <-r.wake:
			case <-time.After(3 * time.Second):
				if err := r.conn.Check(ctx); err != nil {
					return err
				}
			}
		}
	}
}

// snapshotTxn is the transaction of a prepared snapshot of the view.
func (r *SinkRunner) snapshotTxn(p *preparedSnap, resync bool) *connector.SinkTxn {
	rows := func(ctx context.Context, fn func(arrow.RecordBatch) error) error {
		ectx := &plan.Ctx{Context: ctx, DB: r.db, Snap: p.snap}
		return plan.ReadView(ectx, &plan.ScanView{View: r.view, Snap: p.snap}, func(rec arrow.RecordBatch) error {
			defer rec.Release()
			return fn(rec)
		})
	}
	return &connector.SinkTxn{To: p.end, Snapshot: true, Resync: resync, Rows: rows}
}

// changesTxn is the transaction of the view's changes [from, to).
func (r *SinkRunner) changesTxn(from, to uint64) *connector.SinkTxn {
	rows := func(_ context.Context, fn func(arrow.RecordBatch) error) error {
		return r.db.Log().Read(memoryPool, r.view.ID, 0, from, to, func(_ uint64, rec arrow.RecordBatch) error {
			defer rec.Release()
			return fn(rec)
		})
	}
	return &connector.SinkTxn{From: from, To: to, Rows: rows}
}

// send writes and commits one transaction, then notes its end.
func (r *SinkRunner) send(ctx context.Context, t *connector.SinkTxn) error {
	n, err := r.conn.Write(ctx, t)
	if err != nil {
		return err
	}
	if err := plan.Failpoint(r.name, "sink_precommit"); err != nil {
		return err
	}
	if err := r.conn.Commit(ctx); err != nil {
		return err
	}
	if err := plan.Failpoint(r.name, "sink_postcommit"); err != nil {
		return err
	}
	r.mu.Lock()
	r.mu.pos = t.To
	r.mu.status.Position, r.mu.status.State, r.mu.status.LastErr = t.To, "RUNNING", ""
	r.mu.status.Sent += int64(n)
	r.mu.Unlock()
	// Pins the changelog (retention); not synced: the external system
	// and the checkpoint's SinkCommit are the truth.
	return r.db.Positions().PutSink(r.id, r.view.ID, t.To)
}

// txnEnd is where the transaction from pos ends: at most sinkTxnRows
// changelog rows on, but never between an update's before-image and its
// after-image (they are adjacent in a changelog, and a checkpoint's end
// never falls between them), so a debezium "u" keeps its before.
func (r *SinkRunner) txnEnd(pos, durable uint64) (uint64, error) {
	if start, _, _, err := r.db.Log().Bounds(r.view.ID, 0); err != nil || pos < start {
		if err == nil {
			err = sqlerr.New(sqlerr.DataCorrupted, "sink %s: the changelog of %s starts at %d, past the sink's position %d", r.name, r.view.Name, start, pos)
		}
		return 0, err
	}
	to := min(durable, pos+sinkTxnRows())
	for to < durable {
		var last Op
		err := r.db.Log().Read(memoryPool, r.view.ID, 0, to-1, to, func(_ uint64, rec arrow.RecordBatch) error {
			defer rec.Release()
			if n := int(rec.NumRows()); n > 0 {
				last = Op(types.DatumAt(rec.Column(int(rec.NumCols())-1), n-1, types.TInt64).I)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if last != OpUpdateBefore {
			break
		}
		to++
	}
	return to, nil
}

// sinkTxnRows bounds the changelog rows one sink transaction carries:
// 50000, or, for tests only, STREAMDB_SINK_TXN_ROWS (read once).
var sinkTxnRows = sync.OnceValue(func() uint64 {
	if n, err := strconv.ParseUint(os.Getenv("STREAMDB_SINK_TXN_ROWS"), 10, 64); err == nil && n > 0 {
		return n
	}
	return 50000
})
