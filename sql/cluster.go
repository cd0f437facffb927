package sql

import (
	"context"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/streamdb/streamdb/connector/kafka"
	"github.com/streamdb/streamdb/connector/pgcdc"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Cluster mode, first slice (docs/design/cluster.md): every node keeps the
// same catalog, and nothing else is shared yet. A session's statement is
// one of three kinds:
//
//   - catalog DDL (CREATE/DROP of tables, sources, materialized and plain
//     views) goes to the cluster's catalog log and is applied, in log
//     order, on every node, this one included (ApplyDDL);
//   - statements whose answer is the same on every node run here: catalog
//     reads (SHOW TABLES, \d, pg_catalog, information_schema, SHOW CREATE),
//     queries over no relation, session settings, SHOW CLUSTER;
//   - everything else would act on this node's data or state alone (INSERT
//     and COPY into a stream whose log is not shared, reads of streams and
//     views, checkpoints, savepoints, jobs, roles, database settings, sinks)
//     and is refused with 0A000 rather than answered for one node; later
//     slices answer some of them for the cluster (reads of views,
//     clusterjobs.go; SHOW JOBS, clustercheckpoint.go).

// Cluster is cluster mode as the engine needs it; cmd/streamdb implements
// it over package cluster. Nil in Config means a single-node server.
type Cluster interface {
	// SubmitDDL appends one DDL statement to the catalog log and returns
	// once this node has applied it, with ApplyDDL's outcome here.
	SubmitDDL(ctx context.Context, user, text string) (*Result, error)
	// Members lists the cluster's live nodes.
	Members(ctx context.Context) ([]ClusterMember, error)
	// Owner is the node that runs view's job ("" while it has none) and
	// whether that node is this one (clusterjobs.go).
	Owner(view string) (node string, self bool)
	// Forward runs a read on node (ServeForward there) and returns its rows.
	Forward(ctx context.Context, node, user, text string) (Rows, error)
}

// catalogCatchUp is the part of a Cluster that lets a statement wait for
// the catalog entries other nodes appended (cmd/streamdb implements it).
type catalogCatchUp interface {
	// CatchUpCatalog waits until this node has applied every catalog entry
	// appended before the call.
	CatchUpCatalog(ctx context.Context) error
}

// catalogBehindTimeout bounds the wait of catalogBehind.
const catalogBehindTimeout = 10 * time.Second

// catalogBehind reports, for a statement that failed with err, whether it
// should run once more: in cluster mode, when it named a relation or
// object this node did not know (42P01, 42704), once this node has
// applied every catalog entry appended before (a CREATE on another node that
// returned before this node applied it: every node applies the catalog
// log by watch, so a client that moves between nodes would otherwise not
// see its own DDL).
func catalogBehind(ctx context.Context, e *Engine, err error) bool {
	c, ok := e.cluster.(catalogCatchUp)
	if !ok {
		return false
	}
	if code := sqlerr.As(err).Code; code != sqlerr.UndefinedTable && code != sqlerr.UndefinedObject {
		return false
	}
	wctx, cancel := context.WithTimeout(ctx, catalogBehindTimeout)
	defer cancel()
	// Run it again even when there was nothing left to wait for: the
	// entry may have been applied between the failure and the wait.
	return c.CatchUpCatalog(wctx) == nil
}

// ClusterMember is one row of SHOW CLUSTER.
type ClusterMember struct {
	ID, PGAddr, PeerAddr, State string
	LeaseExpiry                 time.Time
	Coordinator                 bool
	Jobs                        []string // the views whose jobs it runs
}

// ApplyDDL runs one entry of the cluster's catalog log on e as user: a
// single DDL statement, executed as a session would but without going back
// to the log.
func ApplyDDL(ctx context.Context, e *Engine, user, text string) (*Result, error) {
	s := e.NewSession(user, BootstrapRole)
	defer s.Close()
	s.clusterApply = true
	noteApplying(ctx, e)
	if _, _, _, ok := e.Role(user); !ok {
		return nil, sqlerr.New(sqlerr.InvalidAuthorization, "role %q does not exist on this node", user)
	}
	stmts, err := s.PrepareAll(ctx, text)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 || stmts[0].Empty {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "a catalog log entry must hold one statement")
	}
	return s.Execute(ctx, stmts[0], nil)
}

// sessionCluster is a session's side of cluster mode.
type sessionCluster struct{ *Session }

// gate decides what cluster mode does with st (see the top of this file);
// done is false when st runs here as on a single node.
func (s sessionCluster) gate(ctx context.Context, st *Stmt, params []types.Datum) (res *Result, err error, done bool) {
	switch n := planOf(st).impl.(type) {
	case *parse.CreateSource:
		if strings.EqualFold(n.With["connector"], pgcdc.Name) {
			return nil, notDistributed("CREATE SOURCE ... WITH (connector = 'postgres-cdc')", "a replication slot streams to one node"), true
		}
		if kafka.IsChangelog(n.With) {
			return nil, notDistributed("CREATE SOURCE ... WITH (format = '"+n.With["format"]+"')", "a changelog source is a keyed table one node's ingester writes"), true
		}
		res, err = s.submit(ctx, st, params)
		return res, err, true
	case *parse.CreateTable, *parse.CreatePlainView:
		res, err = s.submit(ctx, st, params)
		return res, err, true
	case *parse.CreateView:
		if n.FromSavepoint != "" {
			return nil, notDistributed("CREATE MATERIALIZED VIEW ... FROM SAVEPOINT", "savepoints are per node"), true
		}
		res, err = s.submit(ctx, st, params)
		return res, err, true
	case *parse.Drop:
		if n.Kind == parse.ObjSavepoint {
			if s.clusterForwarded {
				return nil, nil, false // this node's part (clustersavepoint.go)
			}
			res, err = clusterDropSavepoint(ctx, s, n)
			return res, err, true
		}
		res, err = s.submit(ctx, st, params)
		return res, err, true
	case *parse.CreateSink, *parse.DropSink:
		return nil, notDistributed(statementWords(st), "every node would export its own copy of the view"), true
	case *parse.Copy:
		return gateCopy(ctx, s, st, n)
	case *parse.CreateSavepoint:
		if s.clusterForwarded {
			res, err = savepointPartHere(ctx, s.e, n.Name, n.Views)
		} else {
			res, err = clusterCreateSavepoint(ctx, s, n)
		}
		return res, err, true
	case *parse.Restore:
		switch {
		case !s.clusterForwarded:
			res, err = clusterRestore(ctx, s, n)
		case n.View != "" && n.Savepoint != "":
			res, err = restoreViewHere(ctx, s.e, n.View, n.Savepoint)
		default:
			err = notDistributed(statementWords(st), "a node restores one view at a time")
		}
		return res, err, true
	case *parse.AlterCluster:
		res, err = clusterRebalance(ctx, s)
		return res, err, true
	case *parse.Checkpoint:
		if s.clusterForwarded {
			return nil, nil, false // this node's jobs (clusterops.go)
		}
		res, err = clusterCheckpoint(ctx, s)
		return res, err, true
	case *parse.Show, *parse.ShowCreate, *parse.Discard:
		return nil, nil, false
	case *parse.ShowObjects:
		switch n.What {
		case "cluster", "tables", "materialized views", "sources", "sinks", "roles":
			return nil, nil, false
		case "savepoints":
			if s.clusterForwarded {
				return nil, nil, false
			}
			res, err = clusterShowSavepoints(ctx, s, st)
			return res, err, true
		case "jobs":
			if s.clusterForwarded {
				return nil, nil, false // this node's own jobs (clustercheckpoint.go)
			}
			res, err = showClusterJobs(ctx, s, st)
			return res, err, true
		}
		return nil, notDistributed("SHOW "+strings.ToUpper(n.What), "it would list this node's state alone"), true
	case *parse.Set:
		return nil, s.sessionSetting(n.Name), false
	case *parse.Reset:
		return nil, s.sessionSetting(n.Name), false
	case *parse.Query:
		return s.gateQuery(ctx, st, n, params)
	}
	return nil, notDistributed(statementWords(st), "it would act on this node alone"), true
}

func (s sessionCluster) gateQuery(ctx context.Context, st *Stmt, q *parse.Query, params []types.Datum) (*Result, error, bool) {
	switch n := q.Node.(type) {
	case *ast.DropTableStmt:
		res, err := s.submit(ctx, st, params)
		return res, err, true
	case *ast.ShowStmt:
		return nil, nil, false
	case *ast.InsertStmt:
		if tn, ok := insertTargetName(n); ok {
			if err := gateStreamWrite(s, st, "INSERT", tn, n); err != nil {
				return nil, err, true
			}
			if n.Select != nil {
				return s.insertSelect(ctx, st, n, q, params)
			}
			return nil, nil, false
		}
	case *ast.SetStmt:
		for _, v := range n.Variables {
			if err := s.sessionSetting(v.Name); err != nil {
				return nil, err, true
			}
		}
		return nil, nil, false
	case ast.ResultSetNode:
		views, err := s.localRead(st, n)
		if err == nil && q.EmitChanges {
			err = refuseDistributed(views, "EMIT CHANGES")
		}
		if err != nil {
			return nil, err, true
		}
		if len(views) == 0 {
			return nil, nil, false
		}
		return s.readViews(ctx, st, views, params)
	}
	return nil, notDistributed(statementWords(st), "it would act on this node alone"), true
}

// localRead refuses a query that reads a stream, a source, a view whose
// input differs from node to node or a node's runtime tables (streamdb_*):
// their rows differ from node to node. It returns the materialized views
// the query reads whose input is the same on every node (readViews).
func (s sessionCluster) localRead(st *Stmt, n ast.ResultSetNode) ([]*storage.TableDef, error) {
	cat := &recordingCatalog{e: s.e}
	b := &bind.Binder{Cat: cat, Params: append([]types.T(nil), st.ParamTypes...), User: s.user, Session: sessionInfo{s.Session}}
	if _, err := b.BindQuery(n); err != nil {
		return nil, nil // execution reports it, as on one node
	}
	var views []*storage.TableDef
	for _, t := range cat.seen {
		if t.Kind == storage.KindView {
			why := (clusterJobs{s.e}).perNodeInput(t)
			if why == "" {
				views = append(views, t)
				continue
			}
			return nil, &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
				Msg:    "reading materialized view " + t.Name + " is not supported in cluster mode yet",
				Detail: "Its input differs from node to node: " + why + " (docs/design/cluster.md).",
				Hint:   "Materialized views over sources (datagen, nexmark, kafka) are readable on every node."}
		}
		if logTopic(t) != "" || t.Kind == storage.KindPlainView {
			continue // read from its topic (clusterstream.go); a plain view's relations are seen too
		}
		if t.Kind != storage.KindSystem || strings.HasPrefix(t.Name, "streamdb_") {
			return nil, &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
				Msg:    "reading " + kindWord(t) + " " + t.Name + " is not supported in cluster mode yet",
				Detail: "Each node holds only its own rows: a read would answer for one node. Cluster mode shares the catalog only (docs/design/cluster.md).",
				Hint:   "Catalog reads (\\d, SHOW TABLES, pg_catalog, information_schema) and SHOW CLUSTER work on every node."}
		}
	}
	return views, nil
}

func (s sessionCluster) sessionSetting(name string) error {
	if _, ok := dbSettings[strings.ToLower(name)]; ok {
		return notDistributed("SET "+name, "database settings are per node")
	}
	return nil
}

// submit sends st's text to the catalog log.
func (s sessionCluster) submit(ctx context.Context, st *Stmt, params []types.Datum) (*Result, error) {
	if planOf(st).group != nil || len(params) > 0 {
		return nil, &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
			Msg:  statementWords(st) + " must be sent alone in cluster mode",
			Hint: "Send each DDL statement in a query of its own, without parameters."}
	}
	return s.e.cluster.SubmitDDL(ctx, s.user, st.SQL)
}

func notDistributed(what, why string) error {
	return &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
		Msg:    what + " is not supported in cluster mode yet",
		Detail: "Cluster mode shares the catalog only, and " + why + " (docs/design/cluster.md).",
		Hint:   "Run it on a server started without --cluster-etcd."}
}

// showCluster is SHOW CLUSTER.
func (s sessionShow) showCluster() (*table, error) {
	if s.e.cluster == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SHOW CLUSTER needs cluster mode: start the server with --cluster-etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := s.e.cluster.Members(ctx)
	if err != nil {
		return nil, sqlerr.Wrap("58000", err) // system_error: etcd did not answer
	}
	t := &table{cols: []Column{{Name: "node_id", T: types.TText}, {Name: "pg_address", T: types.TText}, {Name: "peer_address", T: types.TText},
		{Name: "state", T: types.TText}, {Name: "lease_expires_at", T: types.TTimestamp}, {Name: "coordinator", T: types.TBool}, {Name: "jobs", T: types.TText}}}
	for _, m := range ms {
		t.add(str(m.ID), str(m.PGAddr), str(m.PeerAddr), str(m.State), types.Int(m.LeaseExpiry.UTC().UnixMicro()), types.Boolean(m.Coordinator),
			str(strings.Join(m.Jobs, ",")))
	}
	return t, nil
}
