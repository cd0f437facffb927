package sql

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// table builds an in-memory result.
type table struct {
	cols []Column
	rows [][]types.Datum
}

func (t *table) add(ds ...types.Datum) { t.rows = append(t.rows, ds) }

func (t *table) result(st *Stmt, tag string) *Result {
	st.Columns = t.cols
	ts := make([]types.T, len(t.cols))
	bls := make([]arrowBuilder, len(t.cols))
	for i, c := range t.cols {
		ts[i] = c.T
		bls[i] = types.NewBuilder(exec.Allocator(), c.T)
	}
	for _, r := range t.rows {
		for i, d := range r {
			types.AppendDatum(bls[i], d, ts[i])
		}
	}
	cols := make([]arrow.Array, len(bls))
	for i, b := range bls {
		cols[i] = b.NewArray()
		b.Release()
	}
	if tag == "" {
		tag = "SELECT"
	}
	return &Result{Tag: tag, Rows: &sliceRows{recs: []arrow.RecordBatch{newRecord(ts, cols, len(t.rows))}}}
}

func textCols(names ...string) []Column {
	cs := make([]Column, len(names))
	for i, n := range names {
		cs[i] = Column{Name: n, T: types.TText}
	}
	return cs
}

func str(s string) types.Datum { return types.Str(s) }

func (s sessionShow) showColumns(n parse.Statement) ([]Column, error) {
	if f, ok := n.(*parse.Fetch); ok {
		c := s.cursors[f.Cursor]
		if c == nil {
			return nil, sqlerr.New(sqlerr.InvalidCursorName, "cursor %q does not exist", f.Cursor)
		}
		return c.cols, nil
	}
	t, err := s.showTable(n)
	if err != nil {
		return nil, err
	}
	return t.cols, nil
}

func (s sessionShow) execShow(st *Stmt, n parse.Statement) (*Result, error) {
	t, err := s.showTable(n)
	if err != nil {
		return nil, err
	}
	tag := "SHOW"
	if _, ok := n.(*parse.ShowObjects); ok {
		tag = fmt.Sprintf("SELECT %d", len(t.rows))
	}
	return t.result(st, tag), nil
}

func (s sessionShow) showTable(n parse.Statement) (*table, error) {
	e := s.e
	switch n := n.(type) {
	case *parse.Show:
		name := strings.ToLower(n.Name)
		if name == "all" {
			t := &table{cols: textCols("name", "setting", "description")}
			for _, k := range allDBSettings() {
				t.add(str(k), str(e.conf.setting(k)), str("database setting"))
			}
			var keys []string
			for k := range s.vars {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				t.add(str(k), str(s.vars[k]), str("session setting"))
			}
			return t, nil
		}
		t := &table{cols: textCols(n.Name)}
		if _, ok := dbSettings[name]; ok {
			t.add(str(e.conf.setting(name)))
			return t, nil
		}
		if v, ok := s.vars[name]; ok {
			if name == "datestyle" {
				t.cols[0].Name = "DateStyle"
			}
			if name == "timezone" {
				t.cols[0].Name = "TimeZone"
			}
			t.add(str(v))
			return t, nil
		}
		return nil, sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", n.Name)
	case *parse.ShowObjects:
		switch n.What {
		case "tables":
			t := &table{cols: textCols("name")}
			for _, d := range e.sortedTables(storage.KindStream) {
				t.add(str(d.Name))
			}
			return t, nil
		case "streams":
			// streamdb_tables: each stream's log, appended and retained rows
			// (retention removes whole blocks from the start; retention.go).
			t := &table{cols: []Column{{Name: "name", T: types.TText}, {Name: "partitions", T: types.TInt64},
				{Name: "rows_appended", T: types.TInt64}, {Name: "rows_retained", T: types.TInt64}}}
			for _, d := range e.sortedTables(storage.KindStream) {
				parts := max(1, d.Partitions)
				var appended, retained int64
				for p := 0; p < parts; p++ {
					start, end, _, err := e.db.Log().Bounds(d.ID, uint32(p))
					if err != nil {
						return nil, err
					}
					appended += int64(end)
					retained += int64(end - start)
				}
				t.add(str(d.Name), types.Int(int64(parts)), types.Int(appended), types.Int(retained))
			}
			return t, nil
		case "materialized views":
			t := &table{cols: textCols("name", "definition")}
			for _, d := range e.sortedTables(storage.KindView) {
				t.add(str(d.Name), str(d.SQL))
			}
			return t, nil
		case "jobs":
			t, err := e.jobOpts.addErrorRows(e.jobOpts.addJobColumns(e.showJobs()))
			if err != nil {
				return nil, err
			}
			return addClusterColumns(s.e, t), nil
		case "job errors":
			return e.showJobErrors()
		case "late rows":
			return e.showLateRows()
		case "checkpoints":
			t := &table{cols: []Column{{Name: "id", T: types.TInt64}, {Name: "status", T: types.TText}, {Name: "trigger", T: types.TText},
				{Name: "started_at", T: types.TTimestamp}, {Name: "duration_ms", T: types.TInt64}, {Name: "alignment_ms", T: types.TInt64},
				{Name: "state_size", T: types.TInt64}, {Name: "delta_size", T: types.TInt64}, {Name: "jobs", T: types.TText}, {Name: "error", T: types.TText}}}
			uploading := e.sup.waitLocalExports() // an export's failure is part of its record
			for _, r := range e.coord.History() {
				if uploading[r.ID] && r.Status == checkpoint.Completed {
					r.Status = checkpoint.InProgress // complete once in checkpoint storage
				}
				errD := types.Null
				if r.Error != "" {
					errD = str(r.Error)
				}
				t.add(types.Int(int64(r.ID)), str(string(r.Status)), str(r.Trigger), types.Int(r.StartedAt.UTC().UnixMicro()),
					types.Int(r.Duration.Milliseconds()), types.Int(r.Alignment.Milliseconds()), types.Int(r.StateSize), types.Int(r.Size),
					str(strings.Join(r.Jobs, ",")), errD)
			}
			return t, nil
		case "savepoints":
			return e.sup.showSavepoints(), nil
		case "roles":
			return e.roleStore.showRoles(), nil
		case "sources":
			return e.showSources(), nil
		case "sinks":
			return e.sinkMgr.showSinks(), nil
		case "cluster":
			return s.showCluster()
		}
	case *parse.ShowCreate:
		d, ok := e.Table(n.Name)
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", n.Name)
		}
		t := &table{cols: textCols("name", "create_statement")}
		t.add(str(d.Name), str(createStatement(d)))
		return t, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "%s is not supported", showWords(n))
}

// showWords names a SHOW statement for a message in SQL words.
func showWords(n parse.Statement) string {
	switch n := n.(type) {
	case *parse.Show:
		return "SHOW " + n.Name
	case *parse.ShowObjects:
		return "SHOW " + strings.ToUpper(n.What)
	case *parse.ShowCreate:
		return "SHOW CREATE " + strings.ToUpper(string(n.Kind))
	}
	return "this SHOW statement"
}

func (e catalogSource) sortedTables(kind storage.TableKind) []*storage.TableDef {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*storage.TableDef
	for _, t := range e.mu.tables {
		if t.Kind == kind {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func createStatement(t *storage.TableDef) string {
	if t.Kind == storage.KindView {
		return fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", t.Name, t.SQL)
	}
	var parts []string
	for _, c := range t.Columns {
		p := c.Name + " " + c.Type.String()
		if c.NotNull {
			p += " NOT NULL"
		}
		parts = append(parts, p)
	}
	if t.Watermark != nil {
		parts = append(parts, t.Watermark.SQL)
	}
	s := fmt.Sprintf("CREATE TABLE %s (%s)", t.Name, strings.Join(parts, ", "))
	if t.Partitions > 1 {
		s += fmt.Sprintf(" WITH (partitions = %d)", t.Partitions)
	}
	return s
}

func (e sysTables) showJobs() *table {
	t := &table{cols: []Column{{Name: "name", T: types.TText}, {Name: "state", T: types.TText}, {Name: "restarts", T: types.TInt64},
		{Name: "rows_in", T: types.TInt64}, {Name: "lag", T: types.TInt64}, {Name: "state_bytes", T: types.TInt64}, {Name: "evicted", T: types.TInt64},
		{Name: "last_checkpoint", T: types.TInt64},
		{Name: "next_restart", T: types.TTimestamp}, {Name: "strategy", T: types.TText}, {Name: "last_error", T: types.TText},
		{Name: "watermark", T: types.TTimestamp}, {Name: "late_rows", T: types.TInt64},
		{Name: "lost_rows", T: types.TInt64},
		{Name: "backfill_done", T: types.TInt64}, {Name: "backfill_total", T: types.TInt64}}}
	lastCP := map[string]int64{}
	for _, r := range e.coord.History() {
		if r.Status == checkpoint.Completed {
			for _, j := range r.Jobs {
				lastCP[j] = int64(r.ID)
			}
		}
	}
	streams := e.transientJobs()
	sort.Slice(streams, func(i, k int) bool { return streams[i].Name() < streams[k].Name() })
	defer func() {
		e.cdc.jobRows(t)
		for _, j := range streams {
			t.add(str(j.Name()), str(string(exec.JobRunning)), types.Int(0), types.Int(j.RowsIn.Load()),
				types.Int(j.Lag()), types.Int(j.StateBytes()), types.Int(0), types.Null, types.Null, str("none (change stream)"), types.Null,
				watermarkDatum(j), types.Int(j.LateRows()), types.Int(j.LostRows.Load()), types.Null, types.Null)
		}
	}()
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]string, 0, len(e.mu.jobs))
	for n := range e.mu.jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	orNull := func(s string) types.Datum {
		if s == "" {
			return types.Null
		}
		return str(s)
	}
	for _, n := range names {
		j := e.mu.jobs[n]
		var rows, lag, state, evicted int64
		wm, late, lost := types.Null, types.Null, types.Null
		if j.job != nil {
			lost = types.Int(j.job.LostRows.Load())
			rows, lag, state, evicted = j.job.RowsIn.Load(), j.job.Lag(), j.job.StateBytes(), j.job.Evicted.Load()
			wm, late = watermarkDatum(j.job), types.Int(j.job.LateRows())
		}
		next := types.Null
		if j.state == exec.JobRestarting {
			next = types.Int(j.next.UTC().UnixMicro())
		}
		cp := types.Null
		if id, ok := lastCP[n]; ok {
			cp = types.Int(id)
		}
		strategy := ""
		if cfg, err := e.sup.restartConfigLocked(e.mu.tables[n]); err == nil {
			strategy = cfg.String()
		}
		bfDone, bfTotal := types.Null, types.Null
		if d, tot, ok := (backfills{e.Engine}).progressLocked(j); ok {
			bfDone, bfTotal = types.Int(d), types.Int(tot)
		}
		t.add(str(n), str(string(j.state)), types.Int(int64(j.restarts)), types.Int(rows), types.Int(lag),
			types.Int(state), types.Int(evicted), cp,
			next, str(strategy), orNull(j.lastErr), wm, late, lost, bfDone, bfTotal)
	}
	return t
}

// watermarkDatum is a job's watermark as a timestamp; NULL without one.
func watermarkDatum(j *exec.Job) types.Datum {
	if w := j.Watermark(); w != exec.NoWatermark {
		return types.Int(w)
	}
	return types.Null
}

func (e sysTables) showJobErrors() (*table, error) {
	t := &table{cols: []Column{{Name: "job", T: types.TText}, {Name: "stream", T: types.TText}, {Name: "partition_id", T: types.TInt64},
		{Name: "row_offset", T: types.TInt64}, {Name: "error_code", T: types.TText}, {Name: "message", T: types.TText}, {Name: "row_text", T: types.TText},
		{Name: "at", T: types.TTimestamp}}}
	errs, err := e.db.Errors().JobErrors()
	if err != nil {
		return nil, err
	}
	for _, je := range errs {
		stream, part, off := str(je.Stream), types.Int(int64(je.Partition)), types.Int(int64(je.Offset))
		if je.Stream == "" { // a group's row: no position in a stream
			stream, part, off = types.Null, types.Null, types.Null
		}
		t.add(str(je.Job), stream, part, off,
			str(je.Code), str(je.Message), str(je.Row), types.Int(je.At.UnixMicro()))
	}
	return t, nil
}

func (s sessionSettings) execSet(n *parse.Set) (*Result, error) {
	if n.Local {
		if res, done := s.setLocal(n); done {
			return res, nil
		}
	}
	name := strings.ToLower(n.Name)
	if _, ok := serverSettings[name]; ok {
		return nil, errRestartOnly(name)
	}
	if _, ok := dbSettings[name]; ok {
		if err := s.e.conf.setSetting(name, n.Value, n.Default); err != nil {
			return nil, err
		}
		return &Result{Tag: "SET"}, nil
	}
	if readOnly[name] {
		return nil, sqlerr.New(sqlerr.CantChangeRuntimeParam, "parameter %q cannot be changed", name)
	}
	if _, ok := sessionDefaults[name]; !ok {
		prefix, _, dotted := strings.Cut(name, ".")
		if !dotted {
			return nil, sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", n.Name)
		}
		if ownedPrefix(prefix) {
			// PostgreSQL 15's answer for a loaded extension's reserved prefix.
			return nil, &sqlerr.Error{Code: sqlerr.InvalidName, Msg: fmt.Sprintf("invalid configuration parameter name %q", n.Name),
				Detail: fmt.Sprintf("%q is a reserved prefix.", prefix)}
		}
	}
	v := n.Value
	if n.Default {
		v = sessionDefaults[name]
	}
	switch name {
	case "client_encoding":
		if u := strings.ToUpper(strings.ReplaceAll(v, "-", "")); u != "UTF8" && u != "UNICODE" && u != "SQL_ASCII" {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter \"client_encoding\": %q (only UTF8 is supported)", v)
		}
		v = "UTF8"
	case "datestyle", "intervalstyle", "extra_float_digits", "standard_conforming_strings":
		var err error
		if v, err = honestSetting(name, v); err != nil {
			return nil, err
		}
	case "timezone":
		if u := strings.ToUpper(v); u != "UTC" && u != "GMT" && u != "ETC/UTC" && u != "Z" && u != "+00" && u != "00:00" && u != "0" {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter \"TimeZone\": %q (only UTC is supported)", v)
		}
		v = "UTC"
	case "statement_timeout":
		var err error
		if v, err = normalizeTimeout(name, v); err != nil {
			return nil, err
		}
	}
	if chk, ok := sessionChecks[name]; ok {
		nv, err := chk(v)
		if err != nil {
			return nil, &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Msg: fmt.Sprintf("invalid value for parameter %q: %q", name, v), Hint: err.Error()}
		}
		v = nv
	}
	s.vars[name] = v
	res := &Result{Tag: "SET"}
	if report, ok := reportedParams[name]; ok {
		res.ParamChanges = map[string]string{report: v}
	}
	return res, nil
}

// reportedParams are the session settings a ParameterStatus reports when
// they change, by their names there.
var reportedParams = map[string]string{"client_encoding": "client_encoding", "datestyle": "DateStyle", "timezone": "TimeZone",
	"application_name": "application_name", "intervalstyle": "IntervalStyle", "standard_conforming_strings": "standard_conforming_strings"}

func (s sessionSettings) execReset(n *parse.Reset) (*Result, error) {
	name := strings.ToLower(n.Name)
	if name == "all" {
		for k, v := range sessionDefaults {
			s.vars[k] = v
		}
		(sessionAuth{s.Session}).setSuperuserVar()
		return &Result{Tag: "RESET"}, nil
	}
	if _, ok := dbSettings[name]; ok {
		if err := s.e.conf.setSetting(name, "", true); err != nil {
			return nil, err
		}
		return &Result{Tag: "RESET"}, nil
	}
	if _, err := s.execSet(&parse.Set{Name: name, Default: true}); err != nil {
		return nil, err
	}
	return &Result{Tag: "RESET"}, nil
}

// cursor is a DECLAREd query whose rows FETCH reads.
type cursor struct {
	cols    []Column
	rows    Rows
	pending arrow.RecordBatch // rows read but not yet fetched
	live    bool              // a change stream (EMIT CHANGES): FETCH returns what has arrived
}

func (s sessionCursors) declare(ctx context.Context, n *parse.Declare) (*Result, error) {
	if _, ok := s.cursors[n.Cursor]; ok {
		return nil, sqlerr.New(sqlerr.DuplicateCursor, "cursor %q already exists", n.Cursor)
	}
	st := newStmt(n.Query.SQL, stmtPlan{impl: n.Query})
	res, err := s.execQuery(outlivingStatement(ctx), st, n.Query, nil)
	if err != nil {
		return nil, err
	}
	if res.Rows == nil {
		return nil, sqlerr.New(sqlerr.SyntaxError, "DECLARE CURSOR needs a query that returns rows")
	}
	_, live := res.Rows.(*changeRows)
	s.cursors[n.Cursor] = &cursor{cols: st.Columns, rows: res.Rows, live: live}
	return &Result{Tag: "DECLARE CURSOR"}, nil
}

func (s sessionCursors) fetch(ctx context.Context, st *Stmt, n *parse.Fetch) (*Result, error) {
	c := s.cursors[n.Cursor]
	if c == nil {
		return nil, sqlerr.New(sqlerr.InvalidCursorName, "cursor %q does not exist", n.Cursor)
	}
	st.Columns = c.cols
	want := n.Count
	var out []arrow.RecordBatch
	got := int64(0)
	for want < 0 || got < want {
		rec := c.pending
		c.pending = nil
		if rec == nil {
			// A live cursor returns what has arrived once it has some rows;
			// a query's cursor waits for its rows to be produced.
			wctx := ctx
			if got > 0 && c.live {
				var cancel context.CancelFunc
				wctx, cancel = context.WithTimeout(ctx, 10*time.Millisecond)
				r, err := c.rows.Next(wctx)
				cancel()
				if err != nil {
					break
				}
				rec = r
			} else {
				r, err := c.rows.Next(wctx)
				if err != nil {
					return nil, err
				}
				rec = r
			}
		}
		if rec == nil {
			break
		}
		n := rec.NumRows()
		if want >= 0 && got+n > want {
			take := want - got
			out = append(out, rec.NewSlice(0, take))
			c.pending = rec.NewSlice(take, n)
			rec.Release()
			got += take
			break
		}
		out = append(out, rec)
		got += n
	}
	return &Result{Tag: fmt.Sprintf("FETCH %d", got), Rows: &sliceRows{recs: out}}, nil
}

func (s sessionCursors) closeCursor(n *parse.CloseCursor) (*Result, error) {
	if n.Cursor == "" {
		for name, c := range s.cursors {
			c.rows.Close()
			delete(s.cursors, name)
		}
		return &Result{Tag: "CLOSE CURSOR ALL"}, nil
	}
	c := s.cursors[n.Cursor]
	if c == nil {
		return nil, sqlerr.New(sqlerr.InvalidCursorName, "cursor %q does not exist", n.Cursor)
	}
	c.rows.Close()
	if c.pending != nil {
		c.pending.Release()
	}
	delete(s.cursors, n.Cursor)
	return &Result{Tag: "CLOSE CURSOR"}, nil
}

// System tables expose what SHOW prints to SELECT, so it can be filtered,
// joined and aggregated: streamdb_jobs, streamdb_checkpoints,
// streamdb_savepoints, streamdb_tables, streamdb_settings.
var systemTables = map[string]parse.Statement{
	"streamdb_jobs":        &parse.ShowObjects{What: "jobs"},
	"streamdb_checkpoints": &parse.ShowObjects{What: "checkpoints"},
	"streamdb_savepoints":  &parse.ShowObjects{What: "savepoints"},
	"streamdb_tables":      &parse.ShowObjects{What: "streams"},
	"streamdb_settings":    &parse.Show{Name: "all"},
	"streamdb_job_errors":  &parse.ShowObjects{What: "job errors"},
	"streamdb_late_rows":   &parse.ShowObjects{What: "late rows"},
}

func (e sysTables) systemTable(name string) (*storage.TableDef, bool) {
	if gen, ok := pgTables[name]; ok {
		return systemDef(name, gen(catGen{catalogReader: e, colsOnly: true}).cols), true
	}
	show, ok := systemTables[name]
	if !ok {
		return nil, false
	}
	t, err := (sessionShow{e.NewSession("", "")}).showTable(show)
	if err != nil {
		return nil, false
	}
	return systemDef(name, t.cols), true
}

func systemDef(name string, cols []Column) *storage.TableDef {
	def := &storage.TableDef{Name: name, Kind: storage.KindSystem}
	for _, c := range cols {
		def.Columns = append(def.Columns, storage.ColumnDef{Name: strings.ToLower(c.Name), Type: c.T})
	}
	return def
}

// SystemRows implements planner.Snapshots: the settings in pg_settings
// and streamdb_settings are a new session's.
func (e sysTables) SystemRows(name string) (arrow.RecordBatch, error) {
	return e.systemRows(name, e.NewSession("", ""))
}

// sessionSnapshots is planner.Snapshots for a session's statement: its
// pg_settings and streamdb_settings show the session's own settings (its
// is_superuser, what it SET), as SHOW does and PostgreSQL's pg_settings.
type sessionSnapshots struct {
	*Engine
	s *Session
}

// IndexReads implements planner.IndexReader: a session's queries read
// views through their indexes.
func (x sessionSnapshots) IndexReads() bool { return true }

func (x sessionSnapshots) SystemRows(name string) (arrow.RecordBatch, error) {
	return x.systemRows(name, x.s)
}

func (e sysTables) systemRows(name string, s *Session) (arrow.RecordBatch, error) {
	var t *table
	if gen, ok := pgTables[name]; ok {
		t = gen(catGen{catalogReader: e, sess: s})
	} else {
		show, ok := systemTables[name]
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", name)
		}
		var err error
		if t, err = (sessionShow{s}).showTable(show); err != nil {
			return nil, err
		}
	}
	res := t.result(&Stmt{}, "")
	rows := res.Rows.(*sliceRows)
	rec := rows.recs[0]
	rows.recs = nil
	return rec, nil
}
