package sql

import (
	"context"
	"fmt"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/connector/kafka"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// A Kafka changelog source (format 'upsert-avro' or 'debezium-avro') is
// stored as a CDC source is (cdc.go): a keyed table whose log only its
// ingester writes. The ingester polls every partition of the topic, nets
// each poll's rows into the table's rows by key and appends the changes
// with every partition's next offset in one synced batch
// (storage.Log.AppendAtBytes); a restart reads on from the stored offsets.
// Messages that do not decode are skipped, counted and named in SHOW JOBS.

// createKafkaChangelog makes a Kafka changelog source: it checks the
// topic and the registry's subjects, stores the source and starts its
// ingester, which reads the topic from its start.
func (c *cdcIngest) createKafkaChangelog(n *parse.CreateSource, owner string) (*Result, error) {
	e := c.e
	if n.WatermarkCol != "" {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a kafka source in format %s does not take a WATERMARK: its rows are updated and deleted", n.With["format"])
	}
	var declared []connector.Column
	for _, col := range n.Columns {
		declared = append(declared, connector.Column{Name: col.Name, Type: col.Type})
	}
	cl, stored, err := kafka.DescribeChangelog(n.With, declared, n.PrimaryKey)
	if err != nil {
		return nil, err
	}
	t := &storage.TableDef{Name: n.Name, Kind: storage.KindStream, Owner: owner, Partitions: 1,
		Options: maps.Clone(n.With), KeyCols: cl.Key}
	maps.Copy(t.Options, stored)
	for i, col := range cl.Cols {
		nn := false
		for _, k := range cl.Key {
			nn = nn || k == i
		}
		t.Columns = append(t.Columns, storage.ColumnDef{Name: col.Name, Type: col.Type, NotNull: nn})
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
	c.start(t)
	return &Result{Tag: "CREATE SOURCE"}, nil
}

// ingestKafka reads a Kafka changelog source's topic from the stored
// offsets until an error.
func (c *cdcIngest) ingestKafka(ctx context.Context, t *storage.TableDef, r *cdcRun) error {
	e := c.e
	cols := make([]connector.Column, len(t.Columns))
	for i, col := range t.Columns {
		cols[i] = connector.Column{Name: col.Name, Type: col.Type}
	}
	cl, err := kafka.OpenChangelog(t.Options, cols, t.KeyCols)
	if err != nil {
		return &kafka.Failed{Msg: sqlerr.As(err).Msg}
	}
	pos, err := e.db.Positions().SourceBytes(t.ID)
	if err != nil {
		return err
	}
	s, err := cl.Open(pos)
	if err != nil {
		return err
	}
	defer s.Close()
	r.set(exec.JobRunning, nil)
	for {
		rec, pos, moved, err := s.Next(ctx)
		if err != nil {
			return err
		}
		if bad := s.TakeBad(); len(bad) > 0 {
			n := r.bad.Add(int64(len(bad)))
			last := bad[len(bad)-1]
			e.log.Warn("kafka changelog source: bad messages skipped", "source", t.Name, "count", len(bad), "last", last.String())
			r.mu.Lock()
			r.err = fmt.Sprintf("%s: %d bad messages skipped; the last: %s", last.Code, n, last)
			r.mu.Unlock()
		}
		if !moved {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if err := plan.Failpoint(t.Name, "cdc_received"); err != nil {
			if rec != nil {
				rec.Release()
			}
			return err
		}
		n, err := c.apply(ctx, t, rec, func(blocks []arrow.RecordBatch) error {
			_, err := e.db.Log().AppendAtBytes(t.ID, 0, blocks, pos)
			return err
		})
		if err != nil {
			return err
		}
		if err := plan.Failpoint(t.Name, "cdc_stored"); err != nil {
			return err
		}
		r.rows.Add(n)
	}
}
