// Package cluster is streamdb's cluster membership, coordinator election
// and catalog log, kept in etcd (go.etcd.io/etcd/client/v3). It knows
// nothing of SQL: the server gives it a function that applies one catalog
// entry, and it calls that function on every node, in log order.
//
// Contract (keys under /streamdb/<cluster>/):
//
//  1. Membership: nodes/<id> holds the node's addresses (JSON) under the
//     node's lease, which a keepalive renews every third of its TTL. A
//     node that stops renewing (killed, cut off from etcd) disappears from
//     the membership when the lease expires. A node whose lease is lost
//     closes Done and must stop acting as a member.
//  2. Coordinator: one node, elected with concurrency.Election under
//     election/ and held by the same lease. Every write the coordinator
//     makes is fenced by its leadership: a transaction whose first
//     condition is that the leader key still has the create revision it
//     won with, so a deposed coordinator's late write fails.
//  3. Catalog log: ddl/log/<seq> (seq 1, 2, ..., zero-padded) holds one
//     entry each. Any node asks for an entry by putting ddl/req/<id> under
//     its lease; the coordinator turns each request into the next entry and
//     deletes the request in one fenced transaction, so a request becomes
//     at most one entry even across a change of coordinator. Every node
//     applies entries in seq order, first catching up from the last seq it
//     applied (kept in a file beside its data) and then by watch.
//  5. Jobs: jobs/<view> holds the node that runs the view's job, written
//     by the coordinator only (fenced); a dead node's jobs move to live
//     nodes (jobs.go).
//  6. Submit returns once this node has applied the entry made of its
//     request, with that application's result; the other nodes apply the
//     same entry to the same catalog, so they reach the same result.
//  7. Checkpoint pointers: ckpt/<view> names the last committed checkpoint
//     of the view's job in checkpoint storage, written by the job's owner
//     fenced by its assignment (checkpoints.go).
//  8. Savepoints: savepoints/<name> says where each part of a savepoint
//     taken across the nodes is in checkpoint storage, written once
//     (savepoints.go).
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// Config describes one node joining a cluster.
type Config struct {
	Endpoints []string // etcd client URLs
	Cluster   string   // the cluster's name, a key prefix in etcd ("default" if empty)
	NodeID    string
	PGAddr    string // where the node serves PostgreSQL clients
	PeerAddr  string // where the node listens for its peers
	// LeaseTTL is the membership lease's time to live (10s if zero; whole
	// seconds, at least 1).
	LeaseTTL time.Duration
	// AppliedFile keeps the seq of the last applied entry across restarts
	// ("" keeps it in memory only: the node replays the whole log).
	AppliedFile string
	// Apply applies one catalog entry. It is called on one goroutine, in
	// seq order, once per entry (again after a crash between applying and
	// recording the seq). Its result goes back to the Submit that made the
	// entry when that Submit was on this node.
	Apply func(ctx context.Context, e Entry) (any, error)
	// Jobs names the jobs the coordinator must assign (the materialized
	// views of this node's catalog); nil assigns none.
	Jobs func() []string
	// OnAssign gets the set of jobs assigned to this node, every time the
	// node reads the assignment (jobs.go).
	OnAssign func(mine map[string]bool)
	// Handoff asks node to checkpoint its jobs and commit their pointers
	// before the coordinator moves job away from it (rebalance.go).
	Handoff func(ctx context.Context, job, node string) error
	// RebalanceOnJoin makes the coordinator rebalance when a node joins.
	RebalanceOnJoin bool
	// Distributed names the views whose jobs run distributed (dataflow.go):
	// the coordinator places their instances and splits on the live nodes
	// and commits their cluster epochs; nil runs none distributed.
	Distributed func() []DistJob
	// DataflowRound is how often the coordinator asks for a barrier round
	// of each distributed job (0: only on StartRound).
	DataflowRound time.Duration
	// DataflowCheckpoint is how often a round of a distributed view is a
	// checkpoint round, whose snapshots a new generation restores from,
	// read by the coordinator before each round (nil or 0: never; a new
	// generation then starts from the last checkpoint, else from the
	// sources' start).
	DataflowCheckpoint func() time.Duration
	// NodeLost is called on every live node for another node whose
	// membership key went (its lease expired, or it left) and that has not
	// registered again: it ends what that node left open outside etcd
	// (lost.go).
	NodeLost func(ctx context.Context, node string) error
	Logger   *slog.Logger
}

// Entry is one record of the catalog log.
type Entry struct {
	Seq  uint64 `json:"seq"`
	Req  string `json:"req"`  // the request it was made of
	Node string `json:"node"` // the node that submitted it
	User string `json:"user"`
	Text string `json:"text"` // the statement
}

// Member is one node of the membership.
type Member struct {
	ID, PGAddr, PeerAddr string
	// State is "alive", or "suspect" when its lease has not been renewed
	// for more than a third of its TTL (a renewal is late).
	State       string
	LeaseExpiry time.Time
	Coordinator bool
}

type nodeInfo struct {
	PG   string `json:"pg"`
	Peer string `json:"peer"`
}

type request struct {
	Node string `json:"node"`
	User string `json:"user"`
	Text string `json:"text"`
}

type outcome struct {
	res any
	err error
}

// ErrNotMember is returned by Submit once the node has lost its lease.
var ErrNotMember = errors.New("cluster: this node lost its etcd lease and is no longer a member")

// Node is this process's membership in a cluster.
type Node struct {
	cfg    Config
	cli    *clientv3.Client
	sess   *concurrency.Session
	elec   *concurrency.Election
	prefix string
	ttl    int64
	log    *slog.Logger

	coordinator atomic.Bool
	applied     atomic.Uint64
	reqSeq      atomic.Uint64

	mu struct {
		sync.Mutex
		waiters map[string]chan outcome
	}
	assign assignments
	rebal  rebalancer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}
}

// Join connects to etcd, registers the node under a new lease, applies
// every catalog entry it has not applied yet and starts campaigning for
// the coordinator's role and following the log.
func Join(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.NodeID == "" || strings.ContainsAny(cfg.NodeID, "/ \t") {
		return nil, fmt.Errorf("cluster: node id %q must be non-empty, without '/' or spaces", cfg.NodeID)
	}
	if cfg.Cluster == "" {
		cfg.Cluster = "default"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ttl := int64(cfg.LeaseTTL / time.Second)
	if cfg.LeaseTTL == 0 {
		ttl = 10
	}
	if ttl < 1 {
		return nil, fmt.Errorf("cluster: lease TTL %s is under one second", cfg.LeaseTTL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: 5 * time.Second,
		Logger: zap.NewNop(), Context: context.Background()})
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd %v: %w", cfg.Endpoints, err)
	}
	n := &Node{cfg: cfg, cli: cli, prefix: "/streamdb/" + cfg.Cluster + "/", ttl: ttl, log: cfg.Logger,
		done: make(chan struct{})}
	n.mu.waiters = map[string]chan outcome{}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.join(ctx); err != nil {
		n.cancel()
		if n.sess != nil {
			_ = n.sess.Close()
		}
		_ = cli.Close()
		return nil, err
	}
	return n, nil
}

// NodeKey is node's membership key in cluster's etcd keys: present, under
// the node's lease, while it is a member.
func NodeKey(cluster, node string) string { return "/streamdb/" + cluster + "/nodes/" + node }

func (n *Node) join(ctx context.Context) error {
	start, err := readApplied(n.cfg.AppliedFile)
	if err != nil {
		return err
	}
	n.applied.Store(start)
	sess, err := concurrency.NewSession(n.cli, concurrency.WithTTL(int(n.ttl)), concurrency.WithContext(n.ctx))
	if err != nil {
		return fmt.Errorf("cluster: lease: %w", err)
	}
	n.sess = sess
	info, _ := json.Marshal(nodeInfo{PG: n.cfg.PGAddr, Peer: n.cfg.PeerAddr})
	key := NodeKey(n.cfg.Cluster, n.cfg.NodeID)
	// A live node of the same id keeps its key: two processes must not
	// share an id.
	resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(info), clientv3.WithLease(sess.Lease()))).Commit()
	if err != nil {
		return fmt.Errorf("cluster: register: %w", err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("cluster: node id %q is taken by a live node (its lease has not expired)", n.cfg.NodeID)
	}
	rev, err := n.catchUp(ctx)
	if err != nil {
		return err
	}
	n.elec = concurrency.NewElection(sess, n.prefix+"election/")
	n.wg.Add(5)
	go n.watchLost()
	go n.followAssignments()
	go n.follow(rev)
	go n.campaign()
	go n.watchLease()
	return nil
}

// Done is closed when the node's lease is lost (or Close was called).
func (n *Node) Done() <-chan struct{} { return n.done }

// IsCoordinator reports whether this node holds the coordinator's role.
func (n *Node) IsCoordinator() bool { return n.coordinator.Load() }

// Applied is the seq of the last catalog entry this node applied.
func (n *Node) Applied() uint64 { return n.applied.Load() }

// Close resigns the coordinator's role, revokes the lease (the node leaves
// the membership at once) and disconnects.
func (n *Node) Close() error {
	n.cancel()
	var err error
	if n.sess != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = n.cli.Revoke(ctx, n.sess.Lease())
		cancel()
		n.sess.Orphan()
	}
	n.wg.Wait()
	if cerr := n.cli.Close(); err == nil {
		err = cerr
	}
	return err
}

func (n *Node) watchLease() {
	defer n.wg.Done()
	select {
	case <-n.sess.Done():
		if n.ctx.Err() == nil {
			n.log.Error("cluster: the etcd lease is lost; this node is no longer a member", "node", n.cfg.NodeID)
		}
	case <-n.ctx.Done():
	}
	n.coordinator.Store(false)
	close(n.done)
	n.mu.Lock()
	for id, ch := range n.mu.waiters {
		ch <- outcome{err: ErrNotMember}
		delete(n.mu.waiters, id)
	}
	n.mu.Unlock()
}

// Submit asks the coordinator to append a statement to the catalog log and
// waits until this node has applied it, returning Apply's result.
func (n *Node) Submit(ctx context.Context, user, text string) (any, error) {
	id := fmt.Sprintf("%s-%d-%d", n.cfg.NodeID, n.sess.Lease(), n.reqSeq.Add(1))
	ch := make(chan outcome, 1)
	n.mu.Lock()
	select {
	case <-n.done:
		n.mu.Unlock()
		return nil, ErrNotMember
	default:
	}
	n.mu.waiters[id] = ch
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.mu.waiters, id)
		n.mu.Unlock()
	}()
	v, _ := json.Marshal(request{Node: n.cfg.NodeID, User: user, Text: text})
	if _, err := n.cli.Put(ctx, n.prefix+"ddl/req/"+id, string(v), clientv3.WithLease(n.sess.Lease())); err != nil {
		return nil, fmt.Errorf("cluster: submit: %w", err)
	}
	select {
	case o := <-ch:
		return o.res, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Members lists the nodes whose leases are live, by id.
func (n *Node) Members(ctx context.Context) ([]Member, error) {
	resp, err := n.cli.Get(ctx, n.prefix+"nodes/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	leader := ""
	if l, err := n.elec.Leader(ctx); err == nil && len(l.Kvs) > 0 {
		leader = string(l.Kvs[0].Value)
	} else if err != nil && !errors.Is(err, concurrency.ErrElectionNoLeader) {
		return nil, err
	}
	now := time.Now()
	var out []Member
	for _, kv := range resp.Kvs {
		var info nodeInfo
		_ = json.Unmarshal(kv.Value, &info)
		m := Member{ID: strings.TrimPrefix(string(kv.Key), n.prefix+"nodes/"), PGAddr: info.PG, PeerAddr: info.Peer}
		ttl, err := n.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		if err != nil {
			return nil, err
		}
		if ttl.TTL < 0 {
			continue // expired between the two reads
		}
		m.LeaseExpiry = now.Add(time.Duration(ttl.TTL) * time.Second)
		m.State = "alive"
		// etcd reports whole seconds, rounded down: the lease may have up
		// to TTL+1 s left. Suspect only when even that is under the third
		// of the grant at which the keepalive renews it, so a renewal a
		// little late on a busy host does not flag a healthy node.
		if (ttl.TTL+1)*3 <= ttl.GrantedTTL {
			m.State = "suspect"
		}
		m.Coordinator = m.ID == leader
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// campaign holds the coordinator's role whenever the election gives it.
func (n *Node) campaign() {
	defer n.wg.Done()
	for n.ctx.Err() == nil {
		if err := n.elec.Campaign(n.ctx, n.cfg.NodeID); err != nil {
			if n.ctx.Err() != nil {
				return
			}
			n.log.Warn("cluster: campaign", "err", err)
			select {
			case <-time.After(500 * time.Millisecond):
			case <-n.ctx.Done():
			}
			continue
		}
		n.coordinator.Store(true)
		n.rebal.setLead(&leadership{key: n.elec.Key(), rev: n.elec.Rev()})
		n.log.Info("cluster: this node is the coordinator", "node", n.cfg.NodeID, "rev", n.elec.Rev())
		actx, stop := context.WithCancel(n.ctx)
		var aw sync.WaitGroup
		aw.Add(2)
		go func() { defer aw.Done(); n.assignLoop(actx, n.elec.Key(), n.elec.Rev()) }()
		go func() {
			defer aw.Done()
			n.dataflowLoop(actx, &leadership{key: n.elec.Key(), rev: n.elec.Rev()})
		}()
		err := n.coordinate(n.elec.Key(), n.elec.Rev())
		stop()
		aw.Wait()
		n.rebal.setLead(nil)
		n.coordinator.Store(false)
		if n.ctx.Err() != nil {
			return
		}
		n.log.Warn("cluster: no longer the coordinator", "node", n.cfg.NodeID, "err", err)
		// Give the role back so the election goes on without a stale key.
		ctx, cancel := context.WithTimeout(n.ctx, 2*time.Second)
		_ = n.elec.Resign(ctx)
		cancel()
	}
}

// errDeposed is a fenced write that failed its leadership condition.
var errDeposed = errors.New("cluster: fenced write refused: the leader key changed")

// fenced commits ops if leaderKey still has the create revision rev.
func (n *Node) fenced(ctx context.Context, leaderKey string, rev int64, conds []clientv3.Cmp, ops ...clientv3.Op) (bool, error) {
	cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(leaderKey), "=", rev)}, conds...)
	resp, err := n.cli.Txn(ctx).If(cmps...).Then(ops...).
		Else(clientv3.OpGet(leaderKey, clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return false, err
	}
	if resp.Succeeded {
		return true, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 || kvs[0].CreateRevision != rev {
		return false, errDeposed
	}
	return false, nil
}

// coordinate turns requests into log entries while this node leads.
func (n *Node) coordinate(leaderKey string, rev int64) error {
	ctx := n.ctx
	last, err := n.lastSeq(ctx)
	if err != nil {
		return err
	}
	reqPfx := n.prefix + "ddl/req/"
	for {
		resp, err := n.cli.Get(ctx, reqPfx, clientv3.WithPrefix())
		if err != nil {
			return err
		}
		kvs := resp.Kvs
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].CreateRevision < kvs[j].CreateRevision })
		again := false
		for _, kv := range kvs {
			var r request
			if err := json.Unmarshal(kv.Value, &r); err != nil {
				n.log.Warn("cluster: dropping a malformed request", "key", string(kv.Key), "err", err)
				if _, err := n.fenced(ctx, leaderKey, rev, nil, clientv3.OpDelete(string(kv.Key))); err != nil {
					return err
				}
				continue
			}
			e := Entry{Seq: last + 1, Req: strings.TrimPrefix(string(kv.Key), reqPfx), Node: r.Node, User: r.User, Text: r.Text}
			v, _ := json.Marshal(e)
			logKey := n.logKey(e.Seq)
			ok, err := n.fenced(ctx, leaderKey, rev,
				[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(logKey), "=", 0),
					clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)},
				clientv3.OpPut(logKey, string(v)), clientv3.OpDelete(string(kv.Key)))
			if err != nil {
				return err
			}
			if !ok { // the log moved or the request went: read both again
				if last, err = n.lastSeq(ctx); err != nil {
					return err
				}
				again = true
				break
			}
			last++
		}
		if again {
			continue
		}
		// Wait for the next request (or the end of leadership).
		wctx, cancel := context.WithCancel(ctx)
		wch := n.cli.Watch(wctx, reqPfx, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1),
			clientv3.WithFilterDelete())
		var werr error
		select {
		case w, ok := <-wch:
			if !ok {
				werr = ctx.Err()
			} else if w.Err() != nil && !errors.Is(w.Err(), context.Canceled) {
				n.log.Debug("cluster: request watch", "err", w.Err())
			}
		case <-n.sess.Done():
			werr = ErrNotMember
		}
		cancel()
		if werr == nil {
			werr = ctx.Err()
		}
		if werr != nil {
			return werr
		}
		if l, err := n.cli.Get(ctx, leaderKey); err != nil {
			return err
		} else if len(l.Kvs) == 0 || l.Kvs[0].CreateRevision != rev {
			return errDeposed
		}
	}
}

func (n *Node) logKey(seq uint64) string { return fmt.Sprintf("%sddl/log/%020d", n.prefix, seq) }

func (n *Node) lastSeq(ctx context.Context) (uint64, error) {
	resp, err := n.cli.Get(ctx, n.prefix+"ddl/log/", clientv3.WithLastKey()...)
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return strconv.ParseUint(strings.TrimPrefix(string(resp.Kvs[0].Key), n.prefix+"ddl/log/"), 10, 64)
}

// WaitCatalog waits until this node has applied every catalog entry
// appended before the call (found by a linearizable read of the log's
// last key): a statement that named a relation another node has just
// created can then run again.
func (n *Node) WaitCatalog(ctx context.Context) error {
	last, err := n.lastSeq(ctx)
	if err != nil {
		return fmt.Errorf("cluster: read the catalog log: %w", err)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for n.applied.Load() < last {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.done:
			return ErrNotMember
		case <-tick.C:
		}
	}
	return nil
}

// catchUp applies the entries after the last applied one and returns the
// etcd revision it read them at.
func (n *Node) catchUp(ctx context.Context) (int64, error) {
	end := clientv3.GetPrefixRangeEnd(n.prefix + "ddl/log/")
	resp, err := n.cli.Get(ctx, n.logKey(n.applied.Load()+1), clientv3.WithRange(end))
	if err != nil {
		return 0, fmt.Errorf("cluster: read the catalog log: %w", err)
	}
	for _, kv := range resp.Kvs {
		if err := n.applyKV(ctx, kv.Value); err != nil {
			return 0, err
		}
	}
	return resp.Header.Revision, nil
}

// follow applies new entries by watch; after a broken or compacted watch
// it catches up by reading again.
func (n *Node) follow(rev int64) {
	defer n.wg.Done()
	for n.ctx.Err() == nil {
		wctx, cancel := context.WithCancel(n.ctx)
		wch := n.cli.Watch(clientv3.WithRequireLeader(wctx), n.prefix+"ddl/log/", clientv3.WithPrefix(),
			clientv3.WithRev(rev+1), clientv3.WithFilterDelete())
		var err error
		for w := range wch {
			if err = w.Err(); err != nil {
				break
			}
			for _, ev := range w.Events {
				if err = n.applyKV(n.ctx, ev.Kv.Value); err != nil {
					break
				}
			}
			if err != nil {
				break
			}
			rev = w.Header.Revision
		}
		cancel()
		if n.ctx.Err() != nil {
			return
		}
		n.log.Warn("cluster: catalog log watch ended; catching up", "err", err)
		for n.ctx.Err() == nil {
			r, err := n.catchUp(n.ctx)
			if err == nil {
				rev = r
				break
			}
			n.log.Warn("cluster: catch up", "err", err)
			select {
			case <-time.After(time.Second):
			case <-n.ctx.Done():
			}
		}
	}
}

// applyKV applies one log entry if it is the next one; an entry already
// applied is skipped.
func (n *Node) applyKV(ctx context.Context, v []byte) error {
	var e Entry
	if err := json.Unmarshal(v, &e); err != nil {
		return fmt.Errorf("cluster: malformed catalog entry: %w", err)
	}
	next := n.applied.Load() + 1
	if e.Seq < next {
		return nil
	}
	if e.Seq > next {
		return fmt.Errorf("cluster: catalog entry %d arrived before %d", e.Seq, next)
	}
	res, err := n.cfg.Apply(ctx, e)
	if ctx.Err() != nil {
		return ctx.Err() // stopped, perhaps halfway: apply it again next time
	}
	if err != nil && e.Node != n.cfg.NodeID {
		n.log.Warn("cluster: a catalog entry failed here as on the node that made it", "seq", e.Seq, "node", e.Node, "err", err)
	}
	if werr := writeApplied(n.cfg.AppliedFile, e.Seq); werr != nil {
		return werr
	}
	n.applied.Store(e.Seq)
	n.mu.Lock()
	if ch, ok := n.mu.waiters[e.Req]; ok {
		ch <- outcome{res: res, err: err}
		delete(n.mu.waiters, e.Req)
	}
	n.mu.Unlock()
	return nil
}

func readApplied(path string) (uint64, error) {
	if path == "" {
		return 0, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cluster: %s: %w", path, err)
	}
	return v, nil
}

// writeApplied records seq durably (write, sync, rename).
func writeApplied(path string, seq uint64) error {
	if path == "" {
		return nil
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.FormatUint(seq, 10) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
