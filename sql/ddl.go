package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"strconv"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

func (e *Engine) createTable(n *parse.CreateTable, owner string) (*Result, error) {
	if len(n.Columns) == 0 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "a stream needs at least one column")
	}
	t := &storage.TableDef{Name: n.Name, Kind: storage.KindStream, Partitions: 1, Owner: owner}
	seen := map[string]bool{}
	for _, c := range n.Columns {
		if seen[c.Name] {
			return nil, sqlerr.New(sqlerr.DuplicateColumn, "column %q specified more than once", c.Name)
		}
		seen[c.Name] = true
		t.Columns = append(t.Columns, storage.ColumnDef{Name: c.Name, Type: c.Type, NotNull: c.NotNull})
	}
	if err := columnDefaults(e, t, n.Columns); err != nil {
		return nil, err
	}
	if n.WatermarkCol != "" {
		i := t.Column(n.WatermarkCol)
		if i < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q named in WATERMARK FOR does not exist", n.WatermarkCol)
		}
		if t.Columns[i].Type.Kind != types.Timestamp {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "WATERMARK FOR column %q must be of type timestamp, not %s", n.WatermarkCol, t.Columns[i].Type)
		}
		t.Watermark = &storage.Watermark{Column: n.WatermarkCol, DelayUS: n.WatermarkUS, SQL: n.WatermarkSQL}
	}
	for k, v := range n.With {
		switch k {
		case "partitions":
			p, err := strconv.Atoi(v)
			if err != nil || p < 1 || p > 256 {
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "partitions must be an integer from 1 to 256")
			}
			t.Partitions = p
		default:
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized table option %q (allowed: partitions)", k)
		}
	}
	if err := keyedTable(t, n.PrimaryKey); err != nil {
		return nil, err
	}
	if err := streamLogCreate(e, t); err != nil {
		return nil, err
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := types.TypeNamed(n.Name); ok {
		return nil, typeExists(n.Name)
	}
	if _, ok := e.mu.tables[n.Name]; ok {
		if n.IfNotExists {
			return &Result{Tag: "CREATE TABLE", Notices: []string{fmt.Sprintf("relation %q already exists, skipping", n.Name)}}, nil
		}
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", n.Name)
	}
	if err := e.addTableLocked(t); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE TABLE"}, nil
}

// dependents returns the views that read table name.
func (e *Engine) dependentsLocked(name string) []string {
	var out []string
	for _, t := range e.mu.tables {
		if dependsOn(t, name) {
			out = append(out, t.Name)
		}
	}
	return out
}

func (e *Engine) drop(n *parse.Drop) (*Result, error) {
	tag := "DROP TABLE"
	want := storage.KindStream
	switch n.Kind {
	case parse.ObjView:
		tag, want = "DROP MATERIALIZED VIEW", storage.KindView
	case parse.ObjPlainView:
		tag, want = "DROP VIEW", storage.KindPlainView
	case parse.ObjSavepoint:
		return e.sup.dropSavepoint(n.Names, n.IfExists)
	case parse.ObjSource:
		tag, want = "DROP SOURCE", storage.KindSource
	}
	if n.Kind == parse.ObjView {
		for _, name := range n.Names {
			if sinks := e.sinkMgr.sinksOn(name); len(sinks) > 0 {
				return nil, sqlerr.New(sqlerr.DependentObjectsExist, "cannot drop materialized view %q because sink %q reads it", name, sinks[0])
			}
		}
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	var drop []*storage.TableDef
	var notices []string
	for _, name := range n.Names {
		t, ok := e.mu.tables[name]
		if ok && isCDC(t) {
			// A CDC source is stored as a keyed table: DROP SOURCE drops it.
			if n.Kind != parse.ObjSource {
				return nil, sqlerr.New(sqlerr.WrongObjectType, "%q is not a %s (it is a source: DROP SOURCE)", name, n.Kind)
			}
		} else if !ok || t.Kind != want {
			if ok {
				return nil, sqlerr.New(sqlerr.WrongObjectType, "%q is not a %s", name, n.Kind)
			}
			if n.IfExists {
				notices = append(notices, fmt.Sprintf("%s %q does not exist, skipping", n.Kind, name))
				continue
			}
			if n.Kind == parse.ObjView || n.Kind == parse.ObjSource || n.Kind == parse.ObjPlainView {
				return nil, sqlerr.New(sqlerr.UndefinedTable, "%s %q does not exist", n.Kind, name)
			}
			return nil, sqlerr.New(sqlerr.UndefinedTable, "table %q does not exist", name)
		}
		drop = append(drop, t)
		// Views over t, and views over those, go too with CASCADE.
		for i := len(drop) - 1; i < len(drop); i++ {
			for _, dep := range e.dependentsLocked(drop[i].Name) {
				if !n.Cascade && slices.Contains(n.Names, dep) {
					continue // dropped by this statement too
				}
				if !n.Cascade {
					return nil, &sqlerr.Error{Code: sqlerr.DependentObjectsExist,
						Msg:    fmt.Sprintf("cannot drop %s %s because other objects depend on it", n.Kind, name),
						Detail: fmt.Sprintf("%s %s depends on %s", kindWord(e.mu.tables[dep]), dep, drop[i].Name),
						Hint:   "Use DROP ... CASCADE to drop the dependent objects too."}
				}
				if !containsDef(drop, dep) {
					drop = append(drop, e.mu.tables[dep])
				}
			}
		}
	}
	b := e.db.NewBatch()
	for _, t := range drop {
		if je := e.mu.jobs[t.Name]; je != nil {
			if je.job != nil {
				je.job.Stop()
			}
			delete(e.mu.jobs, t.Name)
		}
		storage.DeleteTable(b, t)
		if t.Kind == storage.KindView {
			storage.DeleteJobData(b, t.ID)
		}
	}
	// A table index's catch-up in flight must not write entries after
	// their removal (exec/tableindex.go).
	unlock := lockTableIndexes(drop)
	err := e.db.Commit(b, true)
	unlock()
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, t := range drop {
		if t.Kind == storage.KindView {
			e.db.Memory().Drop(t.ID)
		}
		delete(e.mu.tables, t.Name)
		e.keyed.forget(t.ID)
		gone = append(gone, t.Name)
		if isCDC(t) {
			e.cdc.drop(t)
		}
	}
	streamLogDropped(e, drop)
	if e.conf.settingLocked("checkpoint.cleanup") == "delete_on_cancellation" {
		e.sup.deleteCheckpointsOfLocked(gone)
	}
	return &Result{Tag: tag, Notices: notices}, nil
}

// planView binds and plans a view's defining query.
func (e *Engine) planView(def *storage.TableDef) (plan.Plan, error) {
	stmts, err := parse.ParseAll(def.SQL)
	if err != nil {
		return nil, err
	}
	q, ok := stmts[0].(*parse.Query)
	if !ok {
		return nil, sqlerr.New(sqlerr.Internal, "view %s: stored query is not a query", def.Name)
	}
	rs, ok := q.Node.(ast.ResultSetNode)
	if !ok {
		return nil, sqlerr.New(sqlerr.Internal, "view %s: stored query is not a query", def.Name)
	}
	b := &bind.Binder{Cat: viewCatalog(e), View: true, AvgDistinctAtAvgScale: def.KeyFormat < storage.KeyFormatAvgDistinct}
	plan, err := b.BindQuery(rs)
	if err != nil {
		return nil, err
	}
	if def.KeyFormat >= storage.KeyFormatNarrowJoins {
		plan = planner.PruneJoinInputs(plan)
	}
	return planner.Physical(planner.MarkSourceReads(plan), e)
}

func (e *Engine) createView(ctx context.Context, n *parse.CreateView, owner string) (*Result, error) {
	rs, ok := n.Query.Node.(ast.ResultSetNode)
	if !ok || n.Query.EmitChanges {
		return nil, sqlerr.New(sqlerr.SyntaxError, "CREATE MATERIALIZED VIEW needs a SELECT query")
	}
	if n.FromSavepoint != "" && !n.OrReplace {
		return nil, sqlerr.New(sqlerr.SyntaxError, "FROM SAVEPOINT needs CREATE OR REPLACE MATERIALIZED VIEW")
	}
	ttl, err := takeTTLOption(n.With)
	if err != nil {
		return nil, err
	}
	distOpt, err := takeDistOption(n.With)
	if err != nil {
		return nil, err
	}
	jobOpts, rest, err := splitJobOptions(n.With)
	if err != nil {
		return nil, err
	}
	n.With = rest
	if len(n.With) > 0 && n.FromSavepoint == "" {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "materialized view options are state.ttl, state.backend, state.memory_limit, parallelism, distributed, and allow_non_restored_state with CREATE OR REPLACE ... FROM SAVEPOINT")
	}
	plan, err := (&bind.Binder{Cat: viewCatalog(e), View: true}).BindQuery(rs)
	if err != nil {
		return nil, err
	}
	phys, err := planner.Physical(planner.MarkSourceReads(planner.PruneJoinInputs(plan)), e)
	if err != nil {
		return nil, err
	}
	if err := exec.Check(phys); err != nil {
		return nil, err
	}
	if err := e.queryMem.Process().Admit("CREATE MATERIALIZED VIEW " + n.Name); err != nil {
		return nil, err
	}
	if n.Query.EmitOnWindowClose {
		if err := exec.CheckEmitOnWindowClose(phys); err != nil {
			return nil, err
		}
	}
	def := &storage.TableDef{Name: n.Name, Kind: storage.KindView, SQL: n.Query.SQL,
		Options: sourceOptions(sourcesOf(plan)), Owner: owner, KeyFormat: storage.KeyFormatCurrent}
	if ttl != "" {
		def.Options["state.ttl"] = ttl
	}
	maps.Copy(def.Options, jobOpts)
	if err := decideDistributed(e, def, phys, distOpt); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, c := range plan.Schema() {
		if seen[c.Name] {
			return nil, sqlerr.New(sqlerr.DuplicateColumn, "column %q specified more than once in materialized view %s (name the columns with AS)", c.Name, n.Name)
		}
		seen[c.Name] = true
		t := c.T
		if t.Kind == types.Unknown {
			t = types.TText
		}
		def.Columns = append(def.Columns, storage.ColumnDef{Name: c.Name, Type: t})
	}
	if err := e.sup.ensureChangelogs(ctx, sourcesOf(plan)); err != nil {
		return nil, err
	}
	if n.OrReplace {
		if err := e.sinkMgr.refuseReplaceUnderSink(n.Name); err != nil {
			return nil, err
		}
	}
	if n.FromSavepoint != "" {
		return e.replaceView(ctx, n, def, phys)
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if old, ok := e.mu.tables[n.Name]; ok {
		switch {
		case n.IfNotExists:
			return &Result{Tag: "CREATE MATERIALIZED VIEW", Notices: []string{fmt.Sprintf("relation %q already exists, skipping", n.Name)}}, nil
		case n.OrReplace && old.Kind == storage.KindView:
			// Without a savepoint the new query starts from scratch.
			if je := e.mu.jobs[n.Name]; je != nil && je.job != nil {
				je.job.Stop()
			}
			b := e.db.NewBatch()
			def.ID = old.ID
			def.Owner, def.Grants = old.Owner, old.Grants // replacing keeps owner and grants, as in PostgreSQL
			storage.DeleteJobData(b, def.ID)
			storage.PutTable(b, def)
			if err := e.db.Commit(b, true); err != nil {
				return nil, err
			}
			e.mu.tables[def.Name] = def
			if err := e.sup.startViewJobLocked(def, phys, false); err != nil {
				return nil, err
			}
			if err := (backfills{e}).noteLocked(def.Name, def); err != nil {
				return nil, err
			}
			return &Result{Tag: "CREATE MATERIALIZED VIEW"}, nil
		}
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", n.Name)
	}
	if err := e.addTableLocked(def); err != nil {
		return nil, err
	}
	if err := e.sup.startViewJobLocked(def, phys, false); err != nil {
		return nil, err
	}
	if err := (backfills{e}).noteLocked(def.Name, def); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE MATERIALIZED VIEW"}, nil
}

// sourcesOf names the streams and views a plan reads, each once, in the
// order it reads them (for dependency tracking).
func sourcesOf(n planner.Node) []string {
	var out []string
	var walk func(n planner.Node)
	walk = func(n planner.Node) {
		if s, ok := n.(*planner.Scan); ok && !slices.Contains(out, s.Table.Name) && s.Table.Kind != storage.KindSystem {
			out = append(out, s.Table.Name)
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(n)
	return out
}

// sourceOptions records a view's sources in its catalog entry: "source"
// names the first (as entries written before joins did), "sources" all.
func sourceOptions(names []string) map[string]string {
	opts := map[string]string{}
	if len(names) > 0 {
		opts["source"] = names[0]
	}
	if len(names) > 1 {
		b, _ := json.Marshal(names)
		opts["sources"] = string(b)
	}
	return opts
}

// viewSources names the streams and views a view reads.
func viewSources(v *storage.TableDef) []string {
	var names []string
	if s := v.Options["sources"]; s != "" && json.Unmarshal([]byte(s), &names) == nil {
		return names
	}
	if s := v.Options["source"]; s != "" {
		return []string{s}
	}
	return nil
}

// changeStream runs a transient job whose changes stream to the client.
func (e *Engine) changeStream(ctx context.Context, plan planner.Node) (Rows, error) {
	phys, err := planner.Physical(plan, e)
	if err != nil {
		return nil, err
	}
	if err := e.sup.ensureChangelogs(ctx, sourcesOf(plan)); err != nil {
		return nil, err
	}
	out := make(chan exec.Chunk, 4)
	n := e.streams.Add(1) // change streams write nothing; the id only names them
	j, err := e.startTransient(exec.JobSpec{ID: 1<<63 | n, Name: fmt.Sprintf("change_stream_%d", n), Plan: phys,
		Out: out, Parallelism: 1, Now: time.Now().UnixMicro()})
	if err != nil {
		return nil, err
	}
	return &changeRows{e: e, job: j, out: out, ts: phys.Types()}, nil
}

func textRows(lines []string) Rows {
	bl := types.NewBuilder(exec.Allocator(), types.TText)
	defer bl.Release()
	for _, l := range lines {
		types.AppendDatum(bl, types.Str(l), types.TText)
	}
	return &sliceRows{recs: []arrowRecord{newRecord([]types.T{types.TText}, []arrowArray{bl.NewArray()}, len(lines))}}
}

func containsDef(defs []*storage.TableDef, name string) bool {
	for _, d := range defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

// addTableLocked gives t a new id and stores it in the catalog, durably.
func (e *Engine) addTableLocked(t *storage.TableDef) error {
	b := e.db.NewBatch()
	t.ID = e.db.NewID(b)
	storage.PutTable(b, t)
	if err := e.db.Commit(b, true); err != nil {
		return err
	}
	e.mu.tables[t.Name] = t
	return nil
}

// viewDef returns the catalog entry of materialized view name, or 42P01.
func (e *Engine) viewDef(name string) (*storage.TableDef, error) {
	def, ok := e.Table(name)
	if !ok || def.Kind != storage.KindView {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "materialized view %q does not exist", name)
	}
	return def, nil
}
