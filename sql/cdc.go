package sql

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/connector/kafka"
	"github.com/streamdb/streamdb/connector/pgcdc"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// A PostgreSQL CDC source (CREATE SOURCE ... WITH (connector =
// 'postgres-cdc')) is stored as a changelog table keyed by the upstream
// primary key, whose log only its ingester writes: the initial snapshot
// at CREATE, then one block per upstream transaction that touched the
// table, each appended in one synced batch with the transaction's end LSN
// (storage.Log.AppendAt). The slot's confirmed position is sent upstream
// only after that batch is durable, and a restart resumes from the stored
// LSN, so kill -9 loses and doubles nothing; jobs read the log as they
// read any keyed table, with checkpointed offsets into it.

// isCDC reports whether t is a source stored as a keyed table its
// ingester writes: a PostgreSQL CDC source, or a Kafka changelog source
// (upsert-avro, debezium-avro; kafkacl.go).
func isCDC(t *storage.TableDef) bool {
	return t != nil && t.Kind == storage.KindStream && (strings.EqualFold(t.Options["connector"], pgcdc.Name) || kafka.IsChangelog(t.Options))
}

// cdcIngest runs the CDC sources' ingesters.
type cdcIngest struct {
	e    *Engine
	mu   sync.Mutex
	runs map[uint64]*cdcRun
	wg   sync.WaitGroup
	// pending: the sources whose CREATE SOURCE is running.
	pending map[uint64]bool
	// bgCancel ends startAll's discarding of unfinished sources (Close).
	bgCancel context.CancelFunc
}

// cdcRun is one source's ingester and what SHOW JOBS shows of it.
type cdcRun struct {
	name     string
	cancel   context.CancelFunc
	done     chan struct{} // closed when the ingester has returned
	rows     atomic.Int64
	restarts atomic.Int64
	bad      atomic.Int64 // messages a kafka changelog source skipped
	mu       sync.Mutex
	state    exec.JobState
	err      string
}

func (r *cdcRun) set(state exec.JobState, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = state
	if err != nil {
		r.err = err.Error()
		var se *sqlerr.Error
		if errors.As(err, &se) {
			r.err = se.Code + ": " + se.Msg
		}
	}
}

// start runs t's ingester.
func (c *cdcIngest) start(t *storage.TableDef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[uint64]*cdcRun{}
	}
	if _, ok := c.runs[t.ID]; ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &cdcRun{name: t.Name, cancel: cancel, state: exec.JobRunning, done: make(chan struct{})}
	c.runs[t.ID] = r
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(r.done)
		c.run(ctx, t, r)
	}()
}

// stop stops t's ingester (if running) and waits for it, so that it
// appends nothing more.
func (c *cdcIngest) stop(id uint64) {
	c.mu.Lock()
	r := c.runs[id]
	delete(c.runs, id)
	c.mu.Unlock()
	if r != nil {
		r.cancel()
		<-r.done
	}
}

// stopAll stops every ingester and waits for them (Close).
func (c *cdcIngest) stopAll() {
	c.mu.Lock()
	if c.bgCancel != nil {
		c.bgCancel()
	}
	for id, r := range c.runs {
		r.cancel()
		delete(c.runs, id)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// run ingests until ctx ends, restarting after failures with a growing
// delay; a schema change upstream fails the source for good.
func (c *cdcIngest) run(ctx context.Context, t *storage.TableDef, r *cdcRun) {
	e := c.e
	delay := 500 * time.Millisecond
	for ctx.Err() == nil {
		err := c.ingest(ctx, t, r)
		if ctx.Err() != nil {
			return
		}
		var sc *pgcdc.SchemaChanged
		var kf *kafka.Failed
		if errors.As(err, &sc) || errors.As(err, &kf) {
			e.log.Error("cdc source failed", "source", t.Name, "err", err)
			r.set(exec.JobFailed, sqlerr.New(sqlerr.ObjectNotInPrereqState, "%s", err.Error()))
			return
		}
		e.log.Warn("cdc source restarting", "source", t.Name, "err", err)
		r.set(exec.JobRestarting, err)
		r.restarts.Add(1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

func cdcTable(t *storage.TableDef) (*pgcdc.Config, *pgcdc.Table, error) {
	cfg, err := pgcdc.ParseOptions(t.Options)
	if err != nil {
		return nil, nil, err
	}
	cols := make([]connector.Column, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = connector.Column{Name: c.Name, Type: c.Type}
	}
	tbl, err := pgcdc.TableFrom(cols, t.KeyCols, t.Options[pgcdc.UpstreamKey])
	return cfg, tbl, err
}

// ingest streams from the stored LSN until an error.
func (c *cdcIngest) ingest(ctx context.Context, t *storage.TableDef, r *cdcRun) error {
	e := c.e
	if kafka.IsChangelog(t.Options) {
		return c.ingestKafka(ctx, t, r)
	}
	cfg, tbl, err := cdcTable(t)
	if err != nil {
		return &pgcdc.SchemaChanged{Msg: err.Error()}
	}
	pos, ok, err := e.db.Positions().Source(t.ID)
	if err != nil {
		return err
	}
	if !ok {
		return &pgcdc.SchemaChanged{Msg: fmt.Sprintf("source %q has no stored snapshot (CREATE SOURCE did not finish): drop and create it again", t.Name)}
	}
	s, err := pgcdc.OpenStream(ctx, cfg, tbl, pos)
	if err != nil {
		return err
	}
	defer s.Close()
	r.set(exec.JobRunning, nil)
	var stored time.Time
	for {
		rec, end, err := s.Next(ctx)
		if err != nil {
			return err
		}
		if rec == nil && time.Since(stored) < time.Second {
			continue // nothing of the table: its LSN is stored with a later one
		}
		if err := plan.Failpoint(t.Name, "cdc_received"); err != nil {
			return err
		}
		n, err := c.apply(ctx, t, rec, func(blocks []arrow.RecordBatch) error {
			_, err := e.db.Log().AppendAt(t.ID, 0, blocks, end)
			return err
		})
		if err != nil {
			return err
		}
		if err := plan.Failpoint(t.Name, "cdc_stored"); err != nil {
			return err
		}
		r.rows.Add(n)
		stored = time.Now()
		s.Confirm(end)
	}
}

// apply appends one upstream transaction's changes to t's log with its
// upstream position (store appends the blocks and the position in one
// synced batch), durably, and returns the count of changes.
func (c *cdcIngest) apply(ctx context.Context, t *storage.TableDef, rec arrow.RecordBatch, store func([]arrow.RecordBatch) error) (int64, error) {
	e := c.e
	st := e.keyed.lock(t.ID)
	defer st.mu.Unlock()
	if rec != nil {
		defer rec.Release()
	}
	if st.rows == nil {
		st.rows, st.off = plan.CachedKeyedRows(t), 0
	}
	off, err := st.rows.CatchUp(&plan.Ctx{Context: ctx, DB: e.db}, st.off)
	if err != nil {
		st.rows = nil
		return 0, err
	}
	st.off = off
	var blocks []arrow.RecordBatch
	var n int64
	if rec != nil {
		if ch := st.rows.ApplyUpstream(rec); ch.Len() > 0 {
			b := st.rows.ChangesRecord(ch)
			defer b.Release()
			blocks = append(blocks, b)
			n = int64(ch.Len())
		}
	}
	if err := store(blocks); err != nil {
		st.rows = nil
		return 0, err
	}
	_, logEnd, _, err := e.db.Log().Bounds(t.ID, 0)
	if err != nil {
		st.rows = nil
		return 0, err
	}
	st.off = logEnd
	return n, nil
}

// create makes a PostgreSQL CDC source: it checks the upstream
// table, creates the replication slot, copies the snapshot the slot
// exported into the source's log with the slot's consistent point, and
// starts the ingester.
func (c *cdcIngest) create(n *parse.CreateSource, owner string) (*Result, error) {
	e := c.e
	if n.WatermarkCol != "" {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "connector %s does not take a WATERMARK: its rows are updated and deleted", pgcdc.Name)
	}
	if len(n.PrimaryKey) > 0 {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "connector %s takes its primary key from the upstream table: leave PRIMARY KEY out", pgcdc.Name)
	}
	cfg, err := pgcdc.ParseOptions(n.With)
	if err != nil {
		return nil, err
	}
	var declared []connector.Column
	for _, c := range n.Columns {
		declared = append(declared, connector.Column{Name: c.Name, Type: c.Type})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	tbl, err := pgcdc.Describe(dctx, cfg, declared)
	dcancel()
	if err != nil {
		return nil, err
	}
	t := &storage.TableDef{Name: n.Name, Kind: storage.KindStream, Owner: owner, Partitions: 1,
		Options: maps.Clone(n.With), KeyCols: tbl.Key}
	t.Options[pgcdc.UpstreamKey] = tbl.EncodeUpstream()
	for i, c := range tbl.Cols {
		nn := false
		for _, k := range tbl.Key {
			nn = nn || k == i
		}
		t.Columns = append(t.Columns, storage.ColumnDef{Name: c.Name, Type: c.Type, NotNull: nn})
	}
	exists := func() (*Result, error) {
		if _, ok := e.mu.tables[n.Name]; !ok {
			return nil, nil
		}
		if n.IfNotExists {
			return &Result{Tag: "CREATE SOURCE", Notices: []string{fmt.Sprintf("relation %q already exists, skipping", n.Name)}}, nil
		}
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", n.Name)
	}
	e.mu.Lock()
	res, err := exists()
	e.mu.Unlock()
	if res != nil || err != nil {
		return res, err
	}
	// The catalog entry comes first, without a stored LSN: the snapshot is
	// appended to its log batch by batch as PostgreSQL sends it (never
	// held whole in memory), and the LSN stored last marks it complete.
	// A source without one is a CREATE that did not finish (kill -9): the
	// next start, or a CREATE of the same name, drops it and its slot
	// (discardIncomplete).
	e.mu.Lock()
	t0 := e.mu.tables[n.Name]
	e.mu.Unlock()
	if t0 != nil && c.incomplete(t0) {
		if err := c.discardIncomplete(ctx, t0); err != nil {
			return nil, err
		}
	}
	// A slot that exists already is refused before the entry is made, so
	// the slot an unfinished CREATE leaves is one it made.
	if err := pgcdc.CheckNoSlot(ctx, cfg); err != nil {
		return nil, err
	}
	e.roundMu.Lock()
	e.mu.Lock()
	if res, err := exists(); res != nil || err != nil {
		e.mu.Unlock()
		e.roundMu.Unlock()
		return res, err
	}
	if err := e.addTableLocked(t); err != nil {
		e.mu.Unlock()
		e.roundMu.Unlock()
		return nil, err
	}
	c.creating(t.ID, true)
	defer c.creating(t.ID, false)
	e.mu.Unlock()
	e.roundMu.Unlock()
	lsn, err := pgcdc.Snapshot(ctx, cfg, tbl, func(r arrow.RecordBatch) error {
		defer r.Release()
		if _, err := e.db.Log().Append(t.ID, 0, []arrow.RecordBatch{r}); err != nil {
			return err
		}
		return plan.Failpoint(t.Name, "cdc_snapshot")
	})
	if err == nil {
		_, err = e.db.Log().AppendAt(t.ID, 0, nil, lsn)
	}
	if err != nil {
		// Snapshot dropped the slot it made; the entry goes too.
		c.dropEntry(t)
		return nil, err
	}
	c.start(t)
	return &Result{Tag: "CREATE SOURCE"}, nil
}

// creating marks a source whose CREATE is running (or no longer).
func (c *cdcIngest) creating(id uint64, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[uint64]bool{}
	}
	if on {
		c.pending[id] = true
	} else {
		delete(c.pending, id)
	}
}

// incomplete reports whether t is a PostgreSQL CDC source whose CREATE
// did not finish: no stored LSN, and no CREATE running for it.
func (c *cdcIngest) incomplete(t *storage.TableDef) bool {
	if !isCDC(t) || kafka.IsChangelog(t.Options) {
		return false
	}
	c.mu.Lock()
	running := c.pending[t.ID]
	c.mu.Unlock()
	if running {
		return false
	}
	_, ok, err := c.e.db.Positions().Source(t.ID)
	return err == nil && !ok
}

// discardIncomplete drops a source whose CREATE did not finish: its
// replication slot (if streamdb got as far as creating it and it is not in
// use), then its catalog entry and log, as if the CREATE had never run.
func (c *cdcIngest) discardIncomplete(ctx context.Context, t *storage.TableDef) error {
	cfg, err := pgcdc.ParseOptions(t.Options)
	if err == nil {
		err = pgcdc.DropSlot(ctx, cfg)
	}
	if err != nil {
		return err
	}
	c.e.log.Warn("cdc source: dropped a source whose CREATE SOURCE did not finish, and its replication slot", "source", t.Name, "slot", cfg.Slot)
	c.dropEntry(t)
	return nil
}

// dropEntry removes a CDC source's catalog entry and log (its CREATE
// failed or did not finish; no job reads it).
func (c *cdcIngest) dropEntry(t *storage.TableDef) {
	e := c.e
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.tables[t.Name] != t {
		return
	}
	b := e.db.NewBatch()
	storage.DeleteTable(b, t)
	if err := e.db.Commit(b, true); err != nil {
		e.log.Warn("cdc source: could not drop the entry of a failed CREATE SOURCE", "source", t.Name, "err", err)
		return
	}
	delete(e.mu.tables, t.Name)
	_ = e.db.Positions().DeleteSource(t.ID)
	streamLogDropped(e, []*storage.TableDef{t})
}

// startAll starts the ingesters of the CDC sources at engine start; a
// PostgreSQL source whose CREATE did not finish is discarded instead (in
// the background, retried while PostgreSQL cannot be reached).
func (c *cdcIngest) startAll(tables map[string]*storage.TableDef) {
	bg, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.bgCancel = cancel
	c.mu.Unlock()
	for _, t := range tables {
		if !isCDC(t) {
			continue
		}
		if !c.incomplete(t) {
			c.start(t)
			continue
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			delay := 500 * time.Millisecond
			for bg.Err() == nil {
				ctx, cancel := context.WithTimeout(bg, 30*time.Second)
				err := c.discardIncomplete(ctx, t)
				cancel()
				if err == nil || bg.Err() != nil {
					return
				}
				c.e.log.Warn("cdc source: could not drop the slot of a source whose CREATE SOURCE did not finish", "source", t.Name, "err", err)
				select {
				case <-bg.Done():
				case <-time.After(delay):
				}
				delay = min(2*delay, 10*time.Second)
			}
		}()
	}
}

// drop stops a dropped CDC source's ingester and drops its slot.
func (c *cdcIngest) drop(t *storage.TableDef) {
	e := c.e
	c.stop(t.ID)
	_ = e.db.Positions().DeleteSource(t.ID)
	if kafka.IsChangelog(t.Options) {
		return
	}
	cfg, err := pgcdc.ParseOptions(t.Options)
	if err != nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The ingester's replication connection may still hold the slot
		// for a moment after it stopped.
		for i := 0; i < 20; i++ {
			if err = pgcdc.DropSlot(ctx, cfg); err == nil {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		e.log.Warn("cdc source: could not drop its replication slot", "slot", cfg.Slot, "err", err)
	}()
}

// jobRows adds the CDC sources' ingesters to SHOW JOBS.
func (c *cdcIngest) jobRows(t *table) {
	c.mu.Lock()
	runs := make([]*cdcRun, 0, len(c.runs))
	for _, r := range c.runs {
		runs = append(runs, r)
	}
	c.mu.Unlock()
	for _, r := range runs {
		r.mu.Lock()
		state, msg := r.state, r.err
		r.mu.Unlock()
		errD := types.Null
		if msg != "" {
			errD = str(msg)
		}
		t.add(str(r.name), str(string(state)), types.Int(r.restarts.Load()), types.Int(r.rows.Load()),
			types.Null, types.Int(0), types.Int(0), types.Null, types.Null, str("cdc source (restarts with backoff)"), errD,
			types.Null, types.Int(0), types.Int(0), types.Null, types.Null) // no lost rows, no backfill
	}
}
