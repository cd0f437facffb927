package sql

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

type arrowRecord = arrow.RecordBatch
type arrowArray = arrow.Array

func newRecord(ts []types.T, cols []arrow.Array, n int) arrow.RecordBatch {
	fs := make([]arrow.Field, len(ts))
	for i, t := range ts {
		fs[i] = types.Field("c", t)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fs, nil), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// changeStreams tracks the running change-stream jobs; they get barriers
// from the engine's ticker without being waited for.
type changeStreams struct {
	sync.Mutex
	jobs map[*exec.Job]bool
}

// startTransient starts a change stream's job. It holds the change
// streams' lock while the job takes its start offsets, so log truncation
// (which holds it too) sees the job's positions or runs before it starts.
func (e streamJobs) startTransient(spec exec.JobSpec) (*exec.Job, error) {
	e.transient.Lock()
	defer e.transient.Unlock()
	j, err := exec.StartJob(e.db, spec)
	if err != nil {
		return nil, err
	}
	if e.transient.jobs == nil {
		e.transient.jobs = map[*exec.Job]bool{}
	}
	e.transient.jobs[j] = true
	return j, nil
}

func (e streamJobs) removeTransient(j *exec.Job) {
	e.transient.Lock()
	delete(e.transient.jobs, j)
	e.transient.Unlock()
	j.Stop()
}

func (e streamJobs) tickTransient(epoch uint64) {
	e.transient.Lock()
	defer e.transient.Unlock()
	for j := range e.transient.jobs {
		j.TryInjectBarrier(&exec.Barrier{Epoch: epoch})
	}
}

// transientJobs returns the running change streams.
func (e streamJobs) transientJobs() []*exec.Job {
	e.transient.Lock()
	defer e.transient.Unlock()
	out := make([]*exec.Job, 0, len(e.transient.jobs))
	for j := range e.transient.jobs {
		out = append(out, j)
	}
	return out
}

// changeRows streams a transient job's changes, each row followed by its op.
type changeRows struct {
	e    *Engine
	job  *exec.Job
	out  chan exec.Chunk
	ts   []types.T
	once sync.Once
}

func (r *changeRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case c := <-r.out:
		defer c.Rec.Release()
		n := int(c.Rec.NumRows())
		cols := make([]arrow.Array, 0, len(r.ts)+1)
		for i := range r.ts {
			col := c.Rec.Column(i)
			col.Retain()
			cols = append(cols, col)
		}
		bl := types.NewBuilder(exec.Allocator(), types.TText)
		for i := 0; i < n; i++ {
			op := exec.OpInsert
			if c.Ops != nil {
				op = c.Ops[i]
			}
			types.AppendDatum(bl, types.Str(op.String()), types.TText)
		}
		cols = append(cols, bl.NewArray())
		bl.Release()
		return newRecord(append(append([]types.T(nil), r.ts...), types.TText), cols, n), nil
	case <-r.job.Failed():
		return nil, r.job.Err()
	case <-ctx.Done():
		return nil, sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
	}
}

func (r *changeRows) Close() {
	r.once.Do(func() { r.e.removeTransient(r.job) })
}

type arrowBuilder = array.Builder
