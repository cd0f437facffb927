package sql

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/connector/kafka"
	"github.com/streamdb/streamdb/connector/pgcdc"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// createSource stores a connector source (CREATE SOURCE). Its connector
// validates the declared columns and the WITH options now, so a stored
// source always opens; the source's splits are its partitions.
func (e *Engine) createSource(n *parse.CreateSource, owner string) (*Result, error) {
	if strings.EqualFold(n.With["connector"], pgcdc.Name) {
		return e.cdc.create(n, owner)
	}
	if kafka.IsChangelog(n.With) {
		return e.cdc.createKafkaChangelog(n, owner)
	}
	t := &storage.TableDef{Name: n.Name, Kind: storage.KindSource, Owner: owner, Options: map[string]string{}}
	for _, c := range n.Columns {
		t.Columns = append(t.Columns, storage.ColumnDef{Name: c.Name, Type: c.Type, NotNull: c.NotNull})
	}
	if n.WatermarkCol != "" {
		t.Watermark = &storage.Watermark{Column: n.WatermarkCol, DelayUS: n.WatermarkUS, SQL: n.WatermarkSQL}
	}
	for k, v := range n.With {
		t.Options[k] = v
	}
	conn, err := plan.Connector(t)
	if err != nil {
		return nil, err
	}
	if len(n.Columns) == 0 {
		// No column list: the connector's own (a Kafka source's
		// registered Avro schema), if it has any.
		if d, ok := conn.(connector.ColumnDeriver); ok {
			for _, c := range d.DerivedColumns() {
				t.Columns = append(t.Columns, storage.ColumnDef{Name: c.Name, Type: c.Type})
			}
		}
		if len(t.Columns) == 0 {
			return nil, sqlerr.New(sqlerr.SyntaxError, "a source needs at least one column")
		}
	}
	t.Partitions = conn.Splits()
	if so, ok := conn.(interface{ StoredOptions() map[string]string }); ok {
		maps.Copy(t.Options, so.StoredOptions())
	}
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.mu.tables[n.Name]; ok {
		if n.IfNotExists {
			return &Result{Tag: "CREATE SOURCE", Notices: []string{fmt.Sprintf("relation %q already exists, skipping", n.Name)}}, nil
		}
		return nil, sqlerr.New(sqlerr.DuplicateTable, "relation %q already exists", n.Name)
	}
	if err := e.addTableLocked(t); err != nil {
		return nil, err
	}
	return &Result{Tag: "CREATE SOURCE"}, nil
}

// showSources lists the sources: name, connector, splits, whether bounded,
// and the options as written (connector = ..., sorted).
func (e *Engine) showSources() *table {
	t := &table{cols: []Column{{Name: "name", T: types.TText}, {Name: "connector", T: types.TText}, {Name: "splits", T: types.TInt64},
		{Name: "bounded", T: types.TBool}, {Name: "options", T: types.TText}}}
	defs := e.sortedTables(storage.KindSource)
	for _, d := range e.sortedTables(storage.KindStream) {
		if isCDC(d) {
			defs = append(defs, d)
		}
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	for _, d := range defs {
		var opts []string
		for k, v := range d.Options {
			if isCDC(d) && strings.EqualFold(k, "password") {
				v = "********"
			}
			if k != "connector" && !strings.HasPrefix(k, "__") {
				opts = append(opts, fmt.Sprintf("%s = '%s'", k, strings.ReplaceAll(v, "'", "''")))
			}
		}
		sort.Strings(opts)
		bounded := types.Null
		if isCDC(d) {
			bounded = types.Boolean(false)
		} else if conn, err := plan.Connector(d); err == nil {
			bounded = types.Boolean(conn.Bounded())
		}
		t.add(str(d.Name), str(d.Options["connector"]), types.Int(int64(max(1, d.Partitions))), bounded, str(strings.Join(opts, ", ")))
	}
	return t
}

// growSourceLocked raises a source's split count to splits, durably, when
// a job found its system has more (a Kafka topic gained partitions; see
// exec.SourceGrown). Jobs that read the source then restart with the new
// splits, which have no position and so start at their beginning. A
// smaller count (another job grew it first) changes nothing. e.mu is held.
func (e *Engine) growSourceLocked(name string, splits int) error {
	def := e.mu.tables[name]
	if def == nil || def.Kind != storage.KindSource {
		return sqlerr.New(sqlerr.UndefinedTable, "source %q does not exist", name)
	}
	if def.Partitions >= splits {
		return nil
	}
	nd := *def
	nd.Partitions = splits
	b := e.db.NewBatch()
	storage.PutTable(b, &nd)
	if err := e.db.Commit(b, true); err != nil {
		return err
	}
	e.mu.tables[name] = &nd
	e.log.Info("source grew", "source", name, "splits", splits)
	return nil
}
