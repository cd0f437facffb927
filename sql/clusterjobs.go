package sql

import (
	"context"
	"sort"
	"strings"

	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Cluster mode, second slice (docs/design/cluster.md): the coordinator
// assigns each materialized view's job to one live node, only that node
// runs it (the others keep the view's entry on standby), and a read of
// views whose input is the same on every node is answered by the node
// that runs them: here if it is this node, else forwarded to it over the
// peer listener (Cluster.Forward, ServeForward there).

// clusterJobs is the engine's side of job assignment.
type clusterJobs struct{ *Engine }

// ClusterJobs names the jobs the cluster's coordinator assigns: every
// materialized view of e's catalog but the distributed ones
// (clusterdist.go), which run on every node.
func ClusterJobs(e *Engine) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for n, t := range e.mu.tables {
		if t.Kind == storage.KindView && !distributed(t) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// runsHere says whether this node runs view's job: always on a single
// node; in cluster mode when the assignment says so.
func (e clusterJobs) runsHere(view string) bool {
	if e.cluster == nil {
		return true
	}
	_, self := e.cluster.Owner(view)
	return self
}

// SetOwnedJobs makes e run exactly the jobs in mine: it starts the ones
// on standby (from this node's last committed epoch of the view, or from
// scratch) and stops, to standby, the ones assigned elsewhere.
func SetOwnedJobs(e *Engine, mine map[string]bool) {
	e.mu.Lock()
	var start, stop []string
	for n, je := range e.mu.jobs {
		switch {
		case mine[n] && je.standby:
			start = append(start, n)
		case !mine[n] && !je.standby && je.state != exec.JobStarting && je.state != exec.JobStopped:
			stop = append(stop, n)
		}
	}
	e.mu.Unlock()
	sort.Strings(start)
	for _, n := range stop {
		toStandby(e, n, "cluster: job moved to another node")
	}
	for _, n := range start {
		e.mu.Lock()
		def, je := e.mu.tables[n], e.mu.jobs[n]
		e.mu.Unlock()
		if def == nil || je == nil || !je.standby {
			continue
		}
		plan, err := e.planView(def)
		var from *CheckpointPointer
		if err == nil {
			// From the last checkpoint another node committed, if any
			// (clustercheckpoint.go); on failure the job stays on standby
			// and the next pass tries again.
			if from, err = restoreClusterJob(e, def, plan); err != nil {
				e.log.Error("cluster: restoring the assigned job from its checkpoint failed", "view", n, "err", err)
				continue
			}
		}
		e.roundMu.Lock()
		e.mu.Lock()
		if e.mu.jobs[n] == je {
			if err == nil {
				err = runViewJobLocked(e.sup, def, plan, false)
			}
			if err == nil {
				noteClusterStart(e, n, from)
			}
			if err != nil {
				e.log.Error("cluster: assigned job did not start", "view", n, "err", err)
				e.mu.jobs[n] = &jobEntry{state: exec.JobFailed, lastErr: err.Error()}
			} else {
				e.log.Info("cluster: running the job assigned here", "view", n, "restored_from", restoredWhat(from))
			}
		}
		e.mu.Unlock()
		e.roundMu.Unlock()
	}
}

// toStandby stops view's job here, to standby, logging why.
func toStandby(e *Engine, view, why string) {
	e.roundMu.Lock()
	defer e.roundMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if je := e.mu.jobs[view]; je != nil && !je.standby {
		if je.job != nil {
			je.job.Stop()
		}
		e.mu.jobs[view] = &jobEntry{state: exec.JobStopped, standby: true}
		noteClusterStop(e, view)
		e.log.Info(why, "view", view)
	}
}

// perNodeInput says why view's input differs from node to node ("" when
// it is the same on every node): only sources whose connector yields the
// same rows wherever it runs (datagen, nexmark, kafka) qualify. Streams
// hold each node's own INSERTs; a view over a view reads that view's
// changelog on its own node, which another node may run.
func (e clusterJobs) perNodeInput(view *storage.TableDef) string {
	for _, name := range viewSources(view) {
		t, ok := e.Table(name)
		switch {
		case !ok:
			return name + " is missing"
		case logTopic(t) != "":
			// Its topic in the shared log (clusterstream.go).
		case t.Kind == storage.KindStream:
			return name + " is a stream, and each node holds its own INSERTs"
		case t.Kind == storage.KindView:
			return "it reads materialized view " + name + ", whose job may run on another node"
		case t.Kind == storage.KindSource:
			switch strings.ToLower(sourceConnector(t)) {
			case "datagen", "nexmark":
			case "kafka":
				if strings.HasPrefix(strings.ToLower(t.Options["scan.startup.mode"]), "latest") {
					return "source " + name + " starts at the end of its topic when its job starts, and a job moved to another node starts again there"
				}
			default:
				return "source " + name + " reads connector " + sourceConnector(t) + " on the node that runs the job"
			}
		default:
			return name + " is not a source"
		}
	}
	return ""
}

// readViews answers a read of views whose input is the same on every
// node: on the node that runs their jobs, at that node's last committed
// epoch.
func (s sessionCluster) readViews(ctx context.Context, st *Stmt, views []*storage.TableDef, params []types.Datum) (*Result, error, bool) {
	if handled, err := readsDistributed(views); handled {
		return nil, err, err != nil // runs here over the gathered rows
	}
	owner, self, err := s.viewsOwner(views)
	if err != nil {
		return nil, err, true
	}
	if self {
		return nil, nil, false
	}
	if s.clusterForwarded {
		return nil, movedErr(views[0].Name, owner), true
	}
	if len(params) > 0 {
		return nil, notDistributed("a read of a view run by another node with parameters",
			"a forwarded read carries the statement's text only"), true
	}
	rows, err := s.e.cluster.Forward(ctx, owner, s.user, st.SQL)
	if err != nil {
		return nil, err, true
	}
	s.e.clusterStat.forwardedReads.Add(1)
	return &Result{Tag: "SELECT", Rows: &countedRows{Rows: rows, c: &s.e.clusterStat}}, nil, true
}

// viewsOwner is the node that runs the jobs of views, and whether it is
// this one; an error if none does yet or they run on different nodes.
func (s sessionCluster) viewsOwner(views []*storage.TableDef) (owner string, self bool, err error) {
	for _, v := range views {
		node, here := s.e.cluster.Owner(v.Name)
		if node == "" {
			return "", false, &sqlerr.Error{Code: sqlerr.ObjectNotInPrereqState,
				Msg:  "no node runs the job of materialized view " + v.Name + " yet",
				Hint: "The coordinator assigns it to a live node within a second (after a node is lost, once its lease expires); retry."}
		}
		if owner != "" && node != owner {
			return "", false, notDistributed("reading views whose jobs run on different nodes in one statement",
				"a read at one epoch across nodes needs the shared epoch of a later slice")
		}
		owner, self = node, here
	}
	return owner, self, nil
}

// movedErr is a statement forwarded here for view, which by this node's
// assignment runs on owner.
func movedErr(view, owner string) error {
	return &sqlerr.Error{Code: "40001",
		Msg:    "the statement was forwarded here, but by this node's assignment the job of " + view + " runs on node " + owner,
		Detail: "The nodes read the assignment a quarter second apart: it is moving.", Hint: "Retry the statement."}
}

// ServeForward runs a read another node forwarded here, as user, and
// returns its rows and columns; done closes the session once the rows
// are read.
func ServeForward(ctx context.Context, e *Engine, user, text string) (cols []Column, rows Rows, done func(), err error) {
	if _, _, _, ok := e.Role(user); !ok {
		return nil, nil, nil, sqlerr.New(sqlerr.InvalidAuthorization, "role %q does not exist on this node", user)
	}
	s := e.NewSession(user, BootstrapRole)
	s.clusterForwarded = true
	// Prepared as the extended protocol does, so the result columns are
	// described before it runs.
	st, err := s.Prepare(ctx, text, nil)
	if err == nil && (st.Columns == nil || len(st.ParamTypes) > 0) {
		err = sqlerr.New(sqlerr.FeatureNotSupported, "a forwarded read must be one statement that returns rows, without parameters")
	}
	var res *Result
	if err == nil {
		res, err = s.Execute(ctx, st, nil)
	}
	if err == nil && res.Rows == nil {
		err = sqlerr.New(sqlerr.FeatureNotSupported, "a forwarded read must return rows")
	}
	if err != nil {
		_ = s.Sync(true)
		s.Close()
		return nil, nil, nil, err
	}
	return st.Columns, res.Rows, func() { res.Rows.Close(); _ = s.Sync(false); s.Close() }, nil
}
