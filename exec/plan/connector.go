package plan

import (
	"strconv"

	"github.com/streamdb/streamdb/connector"
	// The source connectors register themselves (connector.Register).
	_ "github.com/streamdb/streamdb/connector/datagen"
	_ "github.com/streamdb/streamdb/connector/kafka"
	_ "github.com/streamdb/streamdb/connector/nexmark"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Connector opens the connector of a source's catalog entry (CREATE
// SOURCE): its declared columns and WITH options.
func Connector(t *storage.TableDef) (connector.Connector, error) {
	cols := ConnectorColumns(t)
	opts := t.Options
	if t.Partitions > 0 {
		// A stored source's split count: a connector that would ask its
		// system (kafka) takes it instead.
		opts = make(map[string]string, len(t.Options)+1)
		for k, v := range t.Options {
			opts[k] = v
		}
		opts[connector.SplitsKey] = strconv.Itoa(t.Partitions)
	}
	return connector.New(cols, opts)
}

// ConnectorColumns are a catalog entry's columns as connectors see them.
func ConnectorColumns(t *storage.TableDef) []connector.Column {
	cols := make([]connector.Column, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = connector.Column{Name: c.Name, Type: c.Type}
	}
	return cols
}

// ConnectorBatch is the most rows (or generator events) one Read passes.
const ConnectorBatch = 4096

// CheckBounded refuses a batch plan that reads an unbounded connector
// source other than through a LIMIT over filters and projections (0A000):
// anything else would read forever.
func CheckBounded(p Plan) error {
	return checkBounded(p, false)
}

func checkBounded(p Plan, limited bool) error {
	switch n := p.(type) {
	case *ScanStream:
		if n.Table.Kind != storage.KindSource || limited {
			return nil
		}
		conn, err := Connector(n.Table)
		if err != nil {
			return err
		}
		if !conn.Bounded() {
			return sqlerr.New(sqlerr.FeatureNotSupported, "source %q is unbounded: a batch query reads it only under a LIMIT (or give it number_of_rows / nexmark.events)", n.Table.Name)
		}
		return nil
	case *Limit:
		return checkBounded(n.In, n.Count >= 0)
	case *Filter:
		return checkBounded(n.In, limited)
	case *Project:
		return checkBounded(n.In, limited)
	case *Hop:
		return checkBounded(n.In, limited) // a LIMIT of window rows reads fewer input rows
	}
	for _, c := range planInputs(p) {
		if err := checkBounded(c, false); err != nil {
			return err
		}
	}
	return nil
}

// planInputs are p's input plans.
func planInputs(p Plan) []Plan {
	switch n := p.(type) {
	case *Filter:
		return []Plan{n.In}
	case *Project:
		return []Plan{n.In}
	case *Hop:
		return []Plan{n.In}
	case *HashAgg:
		return []Plan{n.In}
	case *SessionAgg:
		return []Plan{n.In}
	case *HashJoin:
		return []Plan{n.Left, n.Right}
	case *Sort:
		return []Plan{n.In}
	case *Limit:
		return []Plan{n.In}
	case *Window:
		return []Plan{n.In}
	case *SingleRow:
		return []Plan{n.In}
	case *LateralFuncScan:
		return []Plan{n.In}
	case *ProjectSRF:
		return []Plan{n.In}
	case *Union:
		return n.Ins
	}
	return nil
}
