package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec/plan"

	// The source connectors register themselves (connector.Register).
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// openConnector positions each split of a connector source at the job's
// committed position (0 for a new job): the position is stored as the
// partition's offset, so checkpoints, savepoints and RESTORE carry it.
func (s *jobSource) openConnector(j *Job) error {
	conn, err := plan.Connector(s.n.src)
	if err != nil {
		return err
	}
	if conn.Splits() != len(s.offsets) {
		return sqlerr.New(sqlerr.Internal, "source %s has %d splits, its catalog entry %d", s.n.src.Name, conn.Splits(), len(s.offsets))
	}
	if p, ok := conn.(connector.Projector); ok && s.n.reads != nil && !j.spec.RecordLate {
		// The columns no operator reads are left out (NULL); a row
		// recorded under job.error_policy = 'skip' shows them NULL. A job
		// that records late rows keeps every column, which the recorded
		// row shows (as pruneHops).
		reads := append([]bool(nil), s.n.reads...)
		if w := s.n.src.Watermark; w != nil {
			if c := s.n.src.Column(w.Column); c >= 0 && c < len(reads) {
				reads[c] = true // event time (watermark.go)
			}
		}
		conn = p.Project(reads)
	}
	s.conn = conn
	for p := range s.offsets {
		var pos uint64
		if j.durable() && !j.fresh {
			committed, _, err := j.db.State().LoadOffset(j.spec.ID, s.n.src.ID, uint32(p))
			if err != nil {
				return err
			}
			pos = committed
		}
		s.offsets[p].Store(pos)
	}
	return nil
}

// SourceGrown reports whether a job failed because a source's system has
// more splits than its catalog entry (a Kafka topic gained partitions):
// the source's name and its new split count.
func SourceGrown(err error) (name string, splits int, ok bool) {
	var g *connector.SplitsGrown
	if !errors.As(err, &g) {
		return "", 0, false
	}
	return g.Source, g.Splits, true
}

// runConnector reads split part of a connector source from the job's
// position on and sends its rows down every edge that reads the source. At
// each barrier it records the split's position with the epoch's writes, so
// the epoch commits exactly the rows read before it: a restart reopens
// the split there and re-reads (for a generator: regenerates) what came
// after, nothing twice and nothing lost.
//
// Connector splits are not aligned to the round's cut as stream logs are:
// a generator has no shared log, so two jobs over one source each read at
// their own pace and a checkpoint may find them at different positions. A
// barrier that asks for catch-up (CHECKPOINT, savepoints) makes a bounded
// split read everything its rate allows at that moment first.
func (r *sourceRunner) runConnector() error {
	j, s, part, barriers, outs := r.j, r.s, r.part, r.barriers, r.outs
	w := j.db.State().NewEpochBatch()
	rd, err := s.conn.Open(int(part), connector.Position(s.offsets[part].Load()), true)
	if err != nil {
		return err
	}
	defer rd.Close()
	// Records the source's system deleted before this split read them
	// are counted where users look (SHOW JOBS lost_rows), per split, and
	// committed with the epoch whose position passed them.
	lossReporter, _ := rd.(connector.LossReporter)
	var lost int64
	lostDirty := false
	if j.durable() && !j.fresh {
		v, err := j.db.State().Get(j.spec.ID, jobStateOp, partKey(keyPartLost, s.n.src.ID, part))
		if err != nil {
			return err
		}
		if n, k := binary.Uvarint(v); k > 0 {
			lost = int64(n)
			j.LostRows.Add(lost)
		}
	}
	countLost := func() {
		if lossReporter == nil {
			return
		}
		if n := lossReporter.TakeLost(); n > 0 {
			lost += n
			lostDirty = true
			j.LostRows.Add(n)
		}
	}
	countLost()
	// Opening resolves a new split's start (scan.startup.mode): from then
	// on that is where the split is, even before its first row, or
	// catching up to its end (CHECKPOINT, savepoints) would wait forever
	// on an empty partition.
	if pos := uint64(rd.Position()); pos > s.offsets[part].Load() {
		s.offsets[part].Store(pos)
	}
	done := false // a bounded split ended
	// A reader that reports its position to its system (a Kafka consumer
	// group) does so once the epoch of a checkpoint barrier has
	// committed: the positions of checkpoints waiting for that.
	committer, _ := rd.(connector.Committer)
	type pendingCommit struct{ epoch, pos uint64 }
	var pending []pendingCommit
	commitDone := func() {
		if len(pending) == 0 {
			return
		}
		committed := j.CommittedEpoch()
		k := 0
		for k < len(pending) && pending[k].epoch <= committed {
			k++
		}
		if k > 0 {
			committer.CommitPosition(connector.Position(pending[k-1].pos))
			pending = append(pending[:0], pending[k:]...)
		}
	}
	// read reads one batch; it reports whether rows may be waiting.
	read := func() (bool, error) {
		if done {
			return false, nil
		}
		first := uint64(rd.Position())
		rec, err := rd.Read(memoryPool, plan.ConnectorBatch)
		countLost()
		if errors.Is(err, connector.EOF) {
			done = true
			return false, nil
		}
		var grown *connector.SplitsGrown
		if errors.As(err, &grown) {
			grown.Source = s.n.src.Name
		}
		if err != nil {
			return false, err
		}
		if br, ok := rd.(connector.BadReporter); ok {
			if err := r.badMessages(w, br.TakeBad()); err != nil {
				if rec != nil {
					rec.Release()
				}
				return false, err
			}
		}
		if rec == nil {
			// Nothing decoded, but the reader may have moved (past a
			// transaction's control records, or skipped bad messages).
			s.offsets[part].Store(uint64(rd.Position()))
			return false, nil
		}
		n := rec.NumRows()
		j.RowsIn.Add(n)
		// Row ids (for a view without a key) are first + the row's index:
		// a batch's rows are at most its events, so ids of different
		// batches never meet, and rows re-read after a restart start at
		// the committed position, above every committed id.
		if n > 0 {
			err = r.route(w, first, rec)
		} else {
			rec.Release()
		}
		s.offsets[part].Store(uint64(rd.Position()))
		return true, err
	}
	onBarrier := func(b *Barrier) error {
		if b.CatchUp && s.conn.Bounded() {
			for {
				more, err := read()
				if err != nil {
					return err
				}
				if !more {
					break
				}
			}
		}
		// A cut on a connector split is a floor: the split reads at least
		// to that position before the barrier passes (a distributed job's
		// new generation catching up with the last committed epoch, whose
		// positions its placement recorded).
		if floor, ok := b.Cut[storage.LogPart{Table: s.n.src.ID, Part: part}]; ok {
			for !done && uint64(rd.Position()) < floor {
				more, err := read()
				if err != nil {
					return err
				}
				if more {
					continue
				}
				select {
				case <-j.ctx.Done():
					return j.ctx.Err()
				case <-time.After(time.Millisecond):
				}
			}
		}
		m := msg{barrier: b, w: w}
		if j.durable() {
			w.SetOffset(j.spec.ID, s.n.src.ID, part, uint64(rd.Position()))
			if lostDirty {
				lr := w.NewRun()
				lr.PutState(j.spec.ID, jobStateOp, partKey(keyPartLost, s.n.src.ID, part), binary.AppendUvarint(nil, uint64(lost)))
				w.AddRun(lr)
				lostDirty = false
			}
			if b.Checkpoint && committer != nil {
				pending = append(pending, pendingCommit{b.Epoch, uint64(rd.Position())})
			}
			s.wm[part].mark(&m, j.spec.ID, s.n.src.ID, part, w)
		} else {
			s.wm[part].mark(&m, j.spec.ID, s.n.src.ID, part, nil)
		}
		for _, o := range outs {
			if err := o.barrier(m); err != nil {
				return err
			}
			m.w = nil
		}
		w = j.db.State().NewEpochBatch()
		return nil
	}
	for {
		select {
		case b := <-barriers:
			if err := onBarrier(b); err != nil {
				return err
			}
			continue
		case <-j.ctx.Done():
			return nil
		default:
		}
		commitDone()
		if j.mem.epochFull() {
			if done, err := r.awaitRoomInEpoch(onBarrier); err != nil || done {
				return err
			}
			continue
		}
		more, err := read()
		if err != nil {
			return err
		}
		if more {
			continue
		}
		// Nothing now: the rate limit, or the split ended. Wait for a
		// barrier, or poll again shortly.
		wait := time.Millisecond
		if done {
			wait = time.Hour
		}
		select {
		case b := <-barriers:
			if err := onBarrier(b); err != nil {
				return err
			}
		case <-j.ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// connEnd is where a connector split's catch-up ends: its end if the
// connector knows one, else the position read so far (nothing to wait for).
func (s *jobSource) connEnd(p int) uint64 {
	if end, ok := s.conn.End(p); ok {
		return uint64(end)
	}
	return s.offsets[p].Load()
}

// badMessages applies job.error_policy to messages a connector could not
// decode: the job fails naming the first one's split and offset, or each
// is recorded (streamdb_job_errors) with the epoch and skipped.
func (r *sourceRunner) badMessages(w *storage.Batch, bad []connector.BadMessage) error {
	j, s := r.j, r.s
	for _, b := range bad {
		if !j.spec.SkipErrors {
			return &sqlerr.Error{Code: b.Code, Msg: b.Err,
				Detail: fmt.Sprintf("source %s, partition %d, offset %d: message %q", s.n.src.Name, b.Split, b.Offset, truncateText(b.Raw, 200))}
		}
		w.PutJobError(j.spec.ID, storage.JobError{Job: j.spec.Name, Stream: s.n.src.Name,
			Partition: uint32(b.Split), Offset: b.Offset, Code: b.Code, Message: b.Err, Row: truncateText(b.Raw, 1000), At: time.Now().UTC()})
	}
	return nil
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
