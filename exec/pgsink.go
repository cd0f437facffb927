package exec

import (
	"context"
	"strings"

	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/connector/postgres"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
)

// Sink connectors by name: CheckSink and StartSink pick the one a sink's
// "connector" option names (kafka, the default when it is missing, so
// the Kafka sink's own message names the option; postgres).

// sinkConnector is a sink's "connector" option, lower case.
func sinkConnector(opts map[string]string) string {
	for k, v := range opts {
		if strings.EqualFold(k, "connector") {
			return strings.ToLower(strings.TrimSpace(v))
		}
	}
	return ""
}

// CheckSink validates a new sink against its view and its external system.
func CheckSink(ctx context.Context, opts map[string]string, view *storage.TableDef, viewPlan plan.Plan) error {
	switch c := sinkConnector(opts); c {
	case "postgres":
		return postgres.CheckSink(ctx, opts, view.Name, plan.ConnectorColumns(view), SinkKeyCols(view, viewPlan), AppendOnly(viewPlan))
	case "kafka", "":
		return CheckKafkaSink(opts, view, viewPlan)
	default:
		return sqlerr.New(sqlerr.InvalidParameterValue, "option \"connector\": unknown sink connector %q (kafka, postgres)", c)
	}
}

// StartSink starts a sink with its connector; it runs until Stop.
func StartSink(db *storage.DB, spec SinkSpec) (*SinkRunner, error) {
	if sinkConnector(spec.Def.Options) != "postgres" {
		return StartKafkaSink(db, spec)
	}
	def, view := spec.Def, spec.View
	p, err := postgres.NewSink(connector.SinkSpec{Name: def.Name, ID: def.ID, View: view.Name, Columns: plan.ConnectorColumns(view),
		KeyCols: spec.KeyCols, AtLeastOnce: spec.AtLeastOnce, Options: def.Options,
		StoredPosition: func() (uint64, bool, error) { return db.State().LoadOffset(def.ID, view.ID, 0) }})
	if err != nil {
		return nil, err
	}
	return StartSinkRunner(db, def, view, p), nil
}
