package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Job assignment (contract 5, docs/design/cluster.md): jobs/<view> holds
// the id of the one node that runs the view's job. Only the coordinator
// writes these keys, each write fenced by its leadership and by the key's
// mod revision it read. It assigns every job the catalog names (Config.Jobs)
// to the live node running the fewest, moves the jobs of a node whose lease
// expired, and deletes the keys of jobs that no longer exist. Every node
// reads the assignment every assignPoll and hands its own set to
// Config.OnAssign, which starts and stops jobs to match.

// assignPoll is how often the coordinator revises the assignment and
// every node reads it.
const assignPoll = 250 * time.Millisecond

type assignments struct {
	mu    sync.Mutex
	owner map[string]string // view -> node, as last read from etcd
	// rev and create are jobs/<view>'s mod and create revisions, as last
	// read (checkpoints.go fences pointer writes with them).
	rev, create map[string]int64
}

// Owner is the node that runs view's job, as this node last read the
// assignment; ok is false when the job has no owner yet.
func (n *Node) Owner(view string) (node string, ok bool) {
	n.assign.mu.Lock()
	defer n.assign.mu.Unlock()
	node, ok = n.assign.owner[view]
	return node, ok
}

// ID is this node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// PeerAddr is the peer address of node id, from the membership.
func (n *Node) PeerAddr(ctx context.Context, id string) (string, error) {
	resp, err := n.cli.Get(ctx, n.prefix+"nodes/"+id)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", errors.New("cluster: node " + id + " is not a member")
	}
	var info nodeInfo
	if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil {
		return "", err
	}
	return info.Peer, nil
}

// JobsOf lists the jobs assigned to each node, as this node last read them.
func (n *Node) JobsOf() map[string][]string {
	n.assign.mu.Lock()
	defer n.assign.mu.Unlock()
	out := map[string][]string{}
	for v, id := range n.assign.owner {
		out[id] = append(out[id], v)
	}
	for _, vs := range out {
		sort.Strings(vs)
	}
	return out
}

// readAssignments reads jobs/ whole: view -> (node, mod revision,
// create revision).
func (n *Node) readAssignments(ctx context.Context) (map[string]string, map[string]int64, map[string]int64, error) {
	pfx := n.prefix + "jobs/"
	resp, err := n.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, nil, nil, err
	}
	owner, rev, create := map[string]string{}, map[string]int64{}, map[string]int64{}
	for _, kv := range resp.Kvs {
		v := strings.TrimPrefix(string(kv.Key), pfx)
		owner[v], rev[v], create[v] = string(kv.Value), kv.ModRevision, kv.CreateRevision
	}
	return owner, rev, create, nil
}

// followAssignments reads the assignment every assignPoll and gives this
// node's jobs to OnAssign, until the node stops.
func (n *Node) followAssignments() {
	defer n.wg.Done()
	t := time.NewTicker(assignPoll)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
		owner, rev, create, err := n.readAssignments(ctx)
		cancel()
		if err == nil {
			n.assign.mu.Lock()
			n.assign.owner, n.assign.rev, n.assign.create = owner, rev, create
			n.assign.mu.Unlock()
			if n.cfg.OnAssign != nil {
				mine := map[string]bool{}
				for v, id := range owner {
					if id == n.cfg.NodeID {
						mine[v] = true
					}
				}
				n.cfg.OnAssign(mine)
			}
		} else if n.ctx.Err() == nil {
			n.log.Warn("cluster: read the job assignment", "err", err)
		}
		select {
		case <-t.C:
		case <-n.ctx.Done():
			return
		}
	}
}

// assignLoop revises the assignment while this node coordinates (ctx
// ends with the leadership won at rev).
func (n *Node) assignLoop(ctx context.Context, leaderKey string, rev int64) {
	t := time.NewTicker(assignPoll)
	defer t.Stop()
	var known map[string]bool // the live nodes at the last pass
	for ctx.Err() == nil {
		if err := n.reassign(ctx, leaderKey, rev); err != nil && ctx.Err() == nil {
			n.log.Warn("cluster: job assignment", "err", err)
		}
		if n.cfg.RebalanceOnJoin {
			known = n.rebalanceOnJoin(ctx, known)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// reassign makes one pass: drop the keys of jobs that are gone, give each
// job without a live owner to the live node running the fewest.
func (n *Node) reassign(ctx context.Context, leaderKey string, rev int64) error {
	if n.cfg.Jobs == nil {
		return nil
	}
	jobs := n.cfg.Jobs()
	resp, err := n.cli.Get(ctx, n.prefix+"nodes/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	load := map[string]int{}
	for _, kv := range resp.Kvs {
		load[strings.TrimPrefix(string(kv.Key), n.prefix+"nodes/")] = 0
	}
	if len(load) == 0 {
		return nil
	}
	owner, modRev, _, err := n.readAssignments(ctx)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, j := range jobs {
		want[j] = true
	}
	for v, id := range owner {
		key := n.prefix + "jobs/" + v
		if !want[v] {
			if _, err := n.fenced(ctx, leaderKey, rev, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", modRev[v])},
				clientv3.OpDelete(key), n.dropPointerOp(v)); err != nil {
				return err
			}
			continue
		}
		if _, live := load[id]; live {
			load[id]++
		}
	}
	sort.Strings(jobs)
	for _, v := range jobs {
		if id, ok := owner[v]; ok {
			if _, live := load[id]; live {
				continue
			}
		}
		best := ""
		for id, l := range load {
			if best == "" || l < load[best] || (l == load[best] && id < best) {
				best = id
			}
		}
		key := n.prefix + "jobs/" + v
		ok, err := n.fenced(ctx, leaderKey, rev, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", modRev[v])},
			clientv3.OpPut(key, best))
		if err != nil {
			return err
		}
		if ok {
			n.log.Info("cluster: job assigned", "job", v, "node", best, "was", owner[v])
			load[best]++
		}
	}
	return nil
}

// rebalanceOnJoin rebalances when a node is live that was not at the last
// pass (known; nil at the first pass of a leadership, which only records
// them) and returns the live nodes.
func (n *Node) rebalanceOnJoin(ctx context.Context, known map[string]bool) map[string]bool {
	resp, err := n.cli.Get(ctx, n.prefix+"nodes/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return known
	}
	live := map[string]bool{}
	joined := false
	for _, kv := range resp.Kvs {
		id := strings.TrimPrefix(string(kv.Key), n.prefix+"nodes/")
		live[id] = true
		joined = joined || known != nil && !known[id]
	}
	if joined {
		if _, err := n.Rebalance(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("cluster: rebalancing after a node joined", "err", err)
			return known // try again at the next pass
		}
	}
	return live
}
