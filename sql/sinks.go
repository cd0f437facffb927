package sql

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Sinks (CREATE SINK name FROM view WITH (connector = 'kafka', ...)) send
// a view's changes to an external system. Each runs beside the view's job
// and reads its changelog; checkpoints drive its two-phase commit (see
// exec/twophase.go); the view writes its changelog for as long as a sink
// reads it.

// sinkSet holds the engine's sinks.
type sinkSet struct {
	sync.Mutex
	defs    map[string]*storage.SinkDef
	running map[string]*exec.SinkRunner
}

// loadSinks reads the sinks' catalog entries and marks their views as
// consumed (so their jobs write changelogs). Called by Open before jobs start.
func (e *sinkManager) loadSinks() error {
	defs, err := e.db.Catalog().LoadSinks()
	if err != nil {
		return err
	}
	e.sinks.defs = map[string]*storage.SinkDef{}
	e.sinks.running = map[string]*exec.SinkRunner{}
	for _, d := range defs {
		e.sinks.defs[d.Name] = d
		e.mu.consumed[d.View] = true
	}
	return nil
}

// startSinks starts every stored sink.
func (e *sinkManager) startSinks() {
	e.sinks.Lock()
	defer e.sinks.Unlock()
	for _, d := range e.sinks.defs {
		if err := e.startSinkLocked(d); err != nil {
			e.log.Error("sink did not start", "sink", d.Name, "err", err)
		}
	}
}

func (e *sinkManager) startSinkLocked(d *storage.SinkDef) error {
	view, ok := e.Table(d.View)
	if !ok {
		return sqlerr.New(sqlerr.UndefinedTable, "materialized view %q does not exist", d.View)
	}
	var keys []int
	if plan, err := e.planView(view); err == nil {
		keys = exec.SinkKeyCols(view, plan)
	}
	s, err := exec.StartSink(e.db, exec.SinkSpec{Def: d, View: view, KeyCols: keys, AtLeastOnce: d.Options["__mode"] == "at_least_once"})
	if err != nil {
		return err
	}
	e.sinks.running[d.Name] = s
	return nil
}

// Committers lists the running sinks, which each checkpoint prepares and
// commits (two-phase commit; exec.SinkRunner).
func (r *registry) Committers() []checkpoint.Committer {
	e := (*Engine)(r)
	e.sinks.Lock()
	defer e.sinks.Unlock()
	names := slices.Sorted(maps.Keys(e.sinks.running))
	out := make([]checkpoint.Committer, len(names))
	for i, n := range names {
		out[i] = e.sinks.running[n]
	}
	return out
}

// stopSinks stops every running sink (Close).
func (e *sinkManager) stopSinks() {
	e.sinks.Lock()
	defer e.sinks.Unlock()
	for n, s := range e.sinks.running {
		s.Stop()
		delete(e.sinks.running, n)
	}
}

// createSink validates and stores a sink, then starts it.
func (e *sinkManager) createSink(ctx context.Context, n *parse.CreateSink, owner string) (*Result, error) {
	view, err := e.viewDef(n.From)
	if err != nil {
		return nil, err
	}
	e.sinks.Lock()
	_, dup := e.sinks.defs[n.Name]
	e.sinks.Unlock()
	if dup {
		if n.IfNotExists {
			return &Result{Tag: "CREATE SINK", Notices: []string{fmt.Sprintf("sink %q already exists, skipping", n.Name)}}, nil
		}
		return nil, sqlerr.New(sqlerr.DuplicateObject, "sink %q already exists", n.Name)
	}
	plan, err := e.planView(view)
	if err != nil {
		return nil, err
	}
	opts := map[string]string{}
	for k, v := range n.With {
		if strings.HasPrefix(k, "__") {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized option %q for a sink", k)
		}
		opts[k] = v
	}
	if err := exec.CheckSink(ctx, opts, view, plan); err != nil {
		return nil, err
	}
	e.mu.Lock()
	opts["__mode"] = e.conf.settingLocked("checkpoint.mode")
	e.mu.Unlock()
	// The view writes its changelog from now on; the sink starts from a
	// snapshot of the view's rows and follows the changelog from there.
	if err := e.sup.ensureChangelog(ctx, view.Name); err != nil {
		return nil, err
	}
	d := &storage.SinkDef{Name: n.Name, View: view.Name, Options: opts, Owner: owner}
	e.sinks.Lock()
	defer e.sinks.Unlock()
	if _, dup := e.sinks.defs[n.Name]; dup {
		return nil, sqlerr.New(sqlerr.DuplicateObject, "sink %q already exists", n.Name)
	}
	b := e.db.NewBatch()
	d.ID = e.db.NewID(b)
	storage.PutSink(b, d)
	if err := e.db.Commit(b, true); err != nil {
		return nil, err
	}
	e.sinks.defs[d.Name] = d
	if err := e.startSinkLocked(d); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE SINK"}, nil
}

// dropSink stops a sink and removes it.
func (e *sinkManager) dropSink(n *parse.DropSink) (*Result, error) {
	// No round runs meanwhile: one that prepared the sink's commit
	// would write its keys back after they are deleted.
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.sinks.Lock()
	defer e.sinks.Unlock()
	d, ok := e.sinks.defs[n.Name]
	if !ok {
		if n.IfExists {
			return &Result{Tag: "DROP SINK", Notices: []string{fmt.Sprintf("sink %q does not exist, skipping", n.Name)}}, nil
		}
		return nil, sqlerr.New(sqlerr.UndefinedObject, "sink %q does not exist", n.Name)
	}
	if s := e.sinks.running[n.Name]; s != nil {
		s.Stop()
		delete(e.sinks.running, n.Name)
	}
	var viewID uint64
	if v, ok := e.Table(d.View); ok {
		viewID = v.ID
	}
	b := e.db.NewBatch()
	storage.DeleteSink(b, d, viewID)
	if err := e.db.Commit(b, true); err != nil {
		return nil, err
	}
	delete(e.sinks.defs, n.Name)
	return &Result{Tag: "DROP SINK"}, nil
}

// sinksOn names the sinks that read view (DROP MATERIALIZED VIEW refuses
// while there are any).
func (e *sinkManager) sinksOn(view string) []string {
	e.sinks.Lock()
	defer e.sinks.Unlock()
	var out []string
	for n, d := range e.sinks.defs {
		if d.View == view {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// showSinks lists the sinks: name, view, connector, topic, format, mode,
// state, committed changelog position, records sent since startup, last error.
func (e *sinkManager) showSinks() *table {
	t := &table{cols: []Column{{Name: "name", T: types.TText}, {Name: "view", T: types.TText}, {Name: "connector", T: types.TText},
		{Name: "topic", T: types.TText}, {Name: "format", T: types.TText}, {Name: "mode", T: types.TText}, {Name: "state", T: types.TText},
		{Name: "position", T: types.TInt64}, {Name: "sent", T: types.TInt64}, {Name: "last_error", T: types.TText}}}
	e.sinks.Lock()
	defer e.sinks.Unlock()
	names := make([]string, 0, len(e.sinks.defs))
	for n := range e.sinks.defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := e.sinks.defs[n]
		opt := func(k string) string {
			for ok, v := range d.Options {
				if strings.EqualFold(ok, k) {
					return v
				}
			}
			return ""
		}
		topic, format := opt("topic"), opt("format")
		if strings.EqualFold(opt("connector"), "postgres") {
			topic, format = opt("table.name"), opt("type") // the target table; append or upsert
		} else if format == "" {
			format = "upsert-json"
		}
		mode := "exactly_once"
		if d.Options["__mode"] == "at_least_once" {
			mode = "at_least_once"
		}
		state, pos, sent, lastErr := "STOPPED", types.Null, types.Int(0), types.Null
		if s := e.sinks.running[n]; s != nil {
			st := s.Status()
			state, pos, sent = st.State, types.Int(int64(st.Position)), types.Int(st.Sent)
			if st.LastErr != "" {
				lastErr = str(st.LastErr)
			}
		}
		t.add(str(d.Name), str(d.View), str(opt("connector")), str(topic), str(format), str(mode), str(state), pos, sent, lastErr)
	}
	return t
}

// stopSinksOf stops the running sinks that read one of views and returns
// their catalog entries (RESTORE).
func (e *sinkManager) stopSinksOf(views map[string]bool) []*storage.SinkDef {
	e.sinks.Lock()
	defer e.sinks.Unlock()
	var out []*storage.SinkDef
	for n, d := range e.sinks.defs {
		if !views[d.View] {
			continue
		}
		if s := e.sinks.running[n]; s != nil {
			s.Stop()
			delete(e.sinks.running, n)
		}
		out = append(out, d)
	}
	return out
}

// nextSinkGenerationsLocked adds to b, for each sink, its catalog entry in
// the next generation: RESTORE of its view abandons the timeline the sink
// followed, so the sink starts over from the restored view (exec's
// KafkaSink.resync), with records marked by the new generation. The entry
// also keeps the view's changelog end now, where the restored job's
// changes will start (a 'json' sink goes on from there). The jobs are
// stopped; e.mu is held.
func (e *sinkManager) nextSinkGenerationsLocked(b *storage.WriteBatch, sinks []*storage.SinkDef) ([]*storage.SinkDef, error) {
	var out []*storage.SinkDef
	for _, d := range sinks {
		view := e.mu.tables[d.View]
		if view == nil {
			continue
		}
		_, end, _, err := e.db.Log().Bounds(view.ID, 0)
		if err != nil {
			return nil, err
		}
		gen, _ := strconv.Atoi(d.Options[connector.SinkGenOption])
		nd := *d
		nd.Options = maps.Clone(d.Options)
		nd.Options[connector.SinkGenOption] = strconv.Itoa(gen + 1)
		nd.Options[connector.SinkFromOption] = strconv.FormatUint(end, 10)
		storage.PutSink(b, &nd)
		out = append(out, &nd)
	}
	return out, nil
}

// restartSinks starts sinks again after a RESTORE: in their next generation
// (next) if it committed, else as they were (old).
func (e *sinkManager) restartSinks(old, next []*storage.SinkDef) {
	if next == nil {
		next = old
	}
	e.sinks.Lock()
	defer e.sinks.Unlock()
	for _, d := range next {
		e.sinks.defs[d.Name] = d
		if err := e.startSinkLocked(d); err != nil {
			e.log.Error("sink did not start", "sink", d.Name, "err", err)
		}
	}
}

// refuseReplaceUnderSink refuses CREATE OR REPLACE of a materialized view
// a sink reads (2BP01), as DROP does: the sink encodes the view's columns
// and key, which the new query may not have. e.mu is not held.
func (e *sinkManager) refuseReplaceUnderSink(view string) error {
	if sinks := e.sinksOn(view); len(sinks) > 0 {
		return &sqlerr.Error{Code: sqlerr.DependentObjectsExist,
			Msg:  fmt.Sprintf("cannot replace materialized view %s because sink %s reads it", view, sinks[0]),
			Hint: "Drop the sink first, or restore the view without replacing it (RESTORE, START JOB ... FROM SAVEPOINT)."}
	}
	return nil
}
