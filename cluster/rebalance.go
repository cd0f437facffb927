package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Rebalancing (docs/design/cluster.md, "Rebalancing"): the coordinator
// moves jobs from the most loaded live node to the least loaded one until
// their counts differ by at most one. Each move is made at a checkpoint:
// the old owner checkpoints its jobs and commits their pointers under its
// claim (Config.Handoff), then the coordinator writes the new owner into
// jobs/<view>, fenced by its leadership and by the key's value and mod
// revision; the old owner stops the job at its next read of the
// assignment and the new owner restores it from that checkpoint. The
// coordinator rebalances on ALTER CLUSTER REBALANCE and when a node joins.

// Move is one job moved by Rebalance.
type Move struct{ Job, From, To string }

// ErrNotCoordinator is Rebalance on a node that does not coordinate.
var ErrNotCoordinator = errors.New("cluster: this node is not the coordinator")

type leadership struct {
	key string
	rev int64
}

type rebalancer struct {
	mu   sync.Mutex // one rebalance at a time
	lead struct {
		sync.Mutex
		cur *leadership // while this node coordinates
	}
}

func (r *rebalancer) setLead(l *leadership) {
	r.lead.Lock()
	r.lead.cur = l
	r.lead.Unlock()
}

// Rebalance moves jobs until the live nodes run as many each, give or take
// one, and returns the moves made. Only the coordinator rebalances.
func (n *Node) Rebalance(ctx context.Context) ([]Move, error) {
	n.rebal.lead.Lock()
	l := n.rebal.lead.cur
	n.rebal.lead.Unlock()
	if l == nil {
		return nil, ErrNotCoordinator
	}
	n.rebal.mu.Lock()
	defer n.rebal.mu.Unlock()
	resp, err := n.cli.Get(ctx, n.prefix+"nodes/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	jobs := map[string][]string{}
	for _, kv := range resp.Kvs {
		jobs[strings.TrimPrefix(string(kv.Key), n.prefix+"nodes/")] = nil
	}
	owner, modRev, _, err := n.readAssignments(ctx)
	if err != nil {
		return nil, err
	}
	for v, id := range owner {
		if _, live := jobs[id]; live {
			jobs[id] = append(jobs[id], v)
		}
	}
	var moves []Move
	for {
		most, least := "", ""
		for id, vs := range jobs {
			if most == "" || len(vs) > len(jobs[most]) || len(vs) == len(jobs[most]) && id < most {
				most = id
			}
			if least == "" || len(vs) < len(jobs[least]) || len(vs) == len(jobs[least]) && id < least {
				least = id
			}
		}
		if most == "" || len(jobs[most])-len(jobs[least]) <= 1 {
			return moves, nil
		}
		sort.Strings(jobs[most])
		v := jobs[most][len(jobs[most])-1]
		if n.cfg.Handoff != nil {
			if err := n.cfg.Handoff(ctx, v, most); err != nil {
				return moves, fmt.Errorf("checkpointing %s on %s before moving it: %w", v, most, err)
			}
		}
		key := n.prefix + "jobs/" + v
		ok, err := n.fenced(ctx, l.key, l.rev, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", modRev[v]),
			clientv3.Compare(clientv3.Value(key), "=", most)}, clientv3.OpPut(key, least))
		if err != nil {
			return moves, err
		}
		if !ok {
			return moves, fmt.Errorf("cluster: the assignment of %s changed while it was being moved", v)
		}
		n.log.Info("cluster: job moved to balance the nodes", "job", v, "from", most, "to", least)
		moves = append(moves, Move{Job: v, From: most, To: least})
		jobs[most] = jobs[most][:len(jobs[most])-1]
		jobs[least] = append(jobs[least], v)
	}
}
