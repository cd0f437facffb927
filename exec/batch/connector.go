package batch

import (
	"errors"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/exec/plan"

	// The source connectors register themselves (connector.Register).
	"github.com/streamdb/streamdb/storage"
)

// scanConnector reads a connector source's whole content for a batch
// query: every split from its start to its end, or, for an unbounded one,
// until emit stops it (runLimit; CheckBounded refuses the query without a
// LIMIT).
func scanConnector(ctx *plan.Ctx, t *storage.TableDef, emit func(arrow.RecordBatch) error) error {
	conn, err := plan.Connector(t)
	if err != nil {
		return err
	}
	for split := 0; split < conn.Splits(); split++ {
		if err := scanSplit(ctx, conn, split, emit); err != nil {
			return err
		}
	}
	return nil
}

func scanSplit(ctx *plan.Ctx, conn connector.Connector, split int, emit func(arrow.RecordBatch) error) error {
	r, err := conn.Open(split, 0, false)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		if err := ctx.Check(); err != nil {
			return err
		}
		rec, err := r.Read(ctx.Alloc(), plan.ConnectorBatch)
		if errors.Is(err, connector.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec == nil {
			// Not paced: only an idle external system has nothing now.
			select {
			case <-ctx.Context.Done():
				return plan.ContextError(ctx.Context)
			case <-time.After(time.Millisecond):
			}
			continue
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
}
