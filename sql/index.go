package sql

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// CREATE INDEX and DROP INDEX on materialized views (decision record
// docs/decisions/2026-12-06-view-indexes.md) and on tables (createOnTable,
// docs/decisions/2026-12-07-table-indexes.md). An index is part of its
// view's catalog entry (storage.TableDef.Indexes) and its entries are
// written by the view's own job in the same epoch batch as the view's rows
// (exec/index.go), so a read through the index sees the epoch a read of
// the view would. Creating or dropping one stops the view's job at a
// committed epoch, changes the index's entries and the catalog in one
// synced batch, and starts the job again from its committed state, as a
// restart does. Indexes share the relations' namespace, as in PostgreSQL,
// and go with their view when it is dropped.

func init() {
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.CreateIndex, _ []types.Datum) (*Result, error) {
		return indexDDL{s.e}.create(n, sessionAuth{s})
	})
	on(func(s *Session, _ context.Context, _ *Stmt, n *parse.DropIndex, _ []types.Datum) (*Result, error) {
		return indexDDL{s.e}.drop(n, sessionAuth{s})
	})
}

type indexDDL struct{ e *Engine }

// findIndexLocked returns the view that has index name, and the index's position.
func (x indexDDL) findIndexLocked(name string) (*storage.TableDef, int) {
	for _, t := range x.e.mu.tables {
		for i, ix := range t.Indexes {
			if ix.Name == name {
				return t, i
			}
		}
	}
	return nil, -1
}

// nameTakenLocked reports whether a relation or an index is called name.
func (x indexDDL) nameTakenLocked(name string) bool {
	if _, ok := x.e.mu.tables[name]; ok {
		return true
	}
	t, _ := x.findIndexLocked(name)
	return t != nil
}

func (x indexDDL) create(n *parse.CreateIndex, auth sessionAuth) (*Result, error) {
	e := x.e
	if e.cluster != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "CREATE INDEX is not supported in cluster mode")
	}
	// The view's plan is made before the locks (binding reads the
	// catalog); an index does not change it.
	if def, ok := e.Table(n.Table); ok && def.Kind == storage.KindStream {
		if !auth.superuser() {
			if err := auth.mustOwn(def); err != nil {
				return nil, err
			}
		}
		return x.createOnTable(n)
	}
	var vp plan.Plan
	if def, ok := e.Table(n.Table); ok && def.Kind == storage.KindView {
		if !auth.superuser() {
			if err := auth.mustOwn(def); err != nil {
				return nil, err
			}
		}
		var err error
		if vp, err = e.planView(def); err != nil {
			return nil, err
		}
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.mu.tables[n.Table]
	switch {
	case !ok:
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", n.Table)
	case def.Kind == storage.KindSource:
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "CREATE INDEX on %s %q is not supported: index a materialized view over it", kindWord(def), n.Table)
	case def.Kind != storage.KindView || vp == nil:
		return nil, sqlerr.New(sqlerr.WrongObjectType, "cannot create index on relation %q", n.Table)
	}
	ix, res, err := x.indexDefLocked(def, n)
	if res != nil || err != nil {
		return res, err
	}
	nd := *def
	nd.Indexes = append(slices.Clip(def.Indexes), ix)
	err = x.rebuildLocked(def, &nd, vp, func(b *storage.WriteBatch) error {
		nd.Indexes[len(nd.Indexes)-1].ID = e.db.NewID(b)
		return plan.BuildIndex(e.db, def.ID, b, &nd, &nd.Indexes[len(nd.Indexes)-1])
	})
	if err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE INDEX"}, nil
}

// indexDefLocked resolves n's columns in def and names the index; a
// non-nil Result is IF NOT EXISTS's answer for a name already taken.
func (x indexDDL) indexDefLocked(def *storage.TableDef, n *parse.CreateIndex) (storage.IndexDef, *Result, error) {
	ix := storage.IndexDef{Name: n.Name}
	for _, c := range n.Cols {
		i := def.Column(c)
		if i < 0 {
			return ix, nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist", c)
		}
		if t := def.Columns[i].Type; !plan.IndexableType(t) {
			return ix, nil, sqlerr.New(sqlerr.FeatureNotSupported, "an index on column %q of type %s is not supported", c, t)
		}
		ix.Cols = append(ix.Cols, i)
	}
	if ix.Name == "" {
		ix.Name = x.defaultNameLocked(def.Name, n.Cols)
	} else if x.nameTakenLocked(ix.Name) {
		if n.IfNotExists {
			return ix, &Result{Tag: "CREATE INDEX", Notices: []string{fmt.Sprintf("relation %q already exists, skipping", ix.Name)}}, nil
		}
		return ix, nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", ix.Name)
	}
	return ix, nil, nil
}

// createOnTable adds an index to a table (exec/tableindex.go): its
// catalog entry commits first, with no entries and no mark, then a
// catch-up indexes the table's rows. Writes go on meanwhile; a lookup
// that comes before the build ends waits for it (the catch-ups of an
// index take turns), and a crash mid-build leaves a mark that the next
// lookup's catch-up goes on from.
func (x indexDDL) createOnTable(n *parse.CreateIndex) (*Result, error) {
	e := x.e
	e.mu.Lock()
	def, ok := e.mu.tables[n.Table]
	if !ok || def.Kind != storage.KindStream {
		e.mu.Unlock()
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", n.Table)
	}
	ix, res, err := x.indexDefLocked(def, n)
	if res != nil || err != nil {
		e.mu.Unlock()
		return res, err
	}
	nd := *def
	b := e.db.NewBatch()
	ix.ID = e.db.NewID(b)
	nd.Indexes = append(slices.Clip(def.Indexes), ix)
	storage.PutTable(b, &nd)
	err = e.db.Commit(b, true)
	b.Close()
	if err == nil {
		e.mu.tables[def.Name] = &nd
	}
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ctx := &plan.Ctx{Context: context.Background(), DB: e.db}
	ix = nd.Indexes[len(nd.Indexes)-1]
	if err := batch.CatchUpTableIndex(ctx, &nd, &ix, nil); err != nil {
		return nil, err
	}
	if err := e.db.Views().CompactIndex(nd.ID, ix.ID); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE INDEX"}, nil
}

// defaultNameLocked is PostgreSQL's name for an unnamed index:
// <table>_<col>[_<col>...]_idx, numbered if taken.
func (x indexDDL) defaultNameLocked(table string, cols []string) string {
	base := table + "_" + strings.Join(cols, "_") + "_idx"
	name := base
	for i := 1; x.nameTakenLocked(name); i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	return name
}

func (x indexDDL) drop(n *parse.DropIndex, auth sessionAuth) (*Result, error) {
	var notices []string
	for _, name := range n.Names {
		res, err := x.dropOne(name, n.IfExists, auth)
		if err != nil {
			return nil, err
		}
		notices = append(notices, res...)
	}
	return &Result{Tag: "DROP INDEX", Notices: notices}, nil
}

func (x indexDDL) dropOne(name string, ifExists bool, auth sessionAuth) ([]string, error) {
	e := x.e
	e.mu.Lock()
	def, _ := x.findIndexLocked(name)
	e.mu.Unlock()
	var vp plan.Plan
	if def != nil && def.Kind == storage.KindStream {
		if !auth.superuser() {
			if err := auth.mustOwn(def); err != nil {
				return nil, err
			}
		}
		return x.dropFromTable(name)
	}
	if def != nil {
		if !auth.superuser() {
			if err := auth.mustOwn(def); err != nil {
				return nil, err
			}
		}
		var err error
		if vp, err = e.planView(def); err != nil {
			return nil, err
		}
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	var notices []string
	{
		def, i := x.findIndexLocked(name)
		if def == nil {
			if t, ok := e.mu.tables[name]; ok {
				return nil, sqlerr.New(sqlerr.WrongObjectType, "%q is not an index (it is a %s)", name, kindWord(t))
			}
			if ifExists {
				return []string{fmt.Sprintf("index %q does not exist, skipping", name)}, nil
			}
			return nil, sqlerr.New(sqlerr.UndefinedObject, "index %q does not exist", name)
		}
		nd := *def
		nd.Indexes = slices.Delete(slices.Clone(def.Indexes), i, i+1)
		id := def.Indexes[i].ID
		if err := x.rebuildLocked(def, &nd, vp, func(b *storage.WriteBatch) error {
			storage.DeleteIndex(b, def.ID, id)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return notices, nil
}

// dropFromTable removes a table's index: its catalog entry, its entries
// and its mark in one synced batch, with its catch-ups held off.
func (x indexDDL) dropFromTable(name string) ([]string, error) {
	e := x.e
	e.mu.Lock()
	defer e.mu.Unlock()
	def, i := x.findIndexLocked(name)
	if def == nil || def.Kind != storage.KindStream {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "index %q does not exist", name)
	}
	ix := def.Indexes[i]
	defer batch.LockTableIndex(ix.ID)()
	nd := *def
	nd.Indexes = slices.Delete(slices.Clone(def.Indexes), i, i+1)
	b := e.db.NewBatch()
	defer b.Close()
	storage.DeleteIndex(b, def.ID, ix.ID)
	storage.PutTable(b, &nd)
	if err := e.db.Commit(b, true); err != nil {
		return nil, err
	}
	e.mu.tables[def.Name] = &nd
	return nil, nil
}

// rebuildLocked replaces view def by nd: it stops the view's job (at its
// last committed epoch: no round runs while roundMu is held), commits
// change's writes with nd's catalog entry in one synced batch, and starts
// the job again on nd if it was running. If the commit fails the old job
// starts again on the old definition.
func (x indexDDL) rebuildLocked(def, nd *storage.TableDef, vp plan.Plan, change func(*storage.WriteBatch) error) error {
	e := x.e
	je := e.mu.jobs[def.Name]
	running := je != nil && je.state == exec.JobRunning && je.job != nil
	if je != nil && je.job != nil {
		je.job.Stop()
	}
	b := e.db.NewBatch()
	err := change(b)
	if err == nil {
		storage.PutTable(b, nd)
		err = e.db.Commit(b, true)
	}
	start := nd
	if err != nil {
		start = def
	} else {
		e.mu.tables[def.Name] = nd
	}
	if running {
		if perr := runViewJobLocked(e.sup, start, vp, false); err == nil {
			err = perr
		}
	}
	// A job that was restarting keeps its entry: its restart plans from
	// the catalog, which now has nd (as START JOB does for a stopped one).
	return err
}

// lockTableIndexes holds off the catch-ups of the indexes of the tables
// among defs until the returned function is called.
func lockTableIndexes(defs []*storage.TableDef) func() {
	var unlocks []func()
	for _, t := range defs {
		if t.Kind != storage.KindStream {
			continue
		}
		for _, ix := range t.Indexes {
			unlocks = append(unlocks, batch.LockTableIndex(ix.ID))
		}
	}
	return func() {
		for _, u := range unlocks {
			u()
		}
	}
}
