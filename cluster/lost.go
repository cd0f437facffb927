package cluster

import (
	"context"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A node whose lease expired (killed, or cut off from etcd) may have left
// work open outside etcd: a Kafka transaction of the stream log that
// read_committed readers wait on until Kafka's transaction timeout. Every
// live node watches the membership and, for each node whose key goes
// (Config.NodeLost), ends that work at once. Several nodes doing it is
// harmless (fencing is idempotent); a node that registered again in the
// meantime is left alone, since its own start fenced its earlier
// transactions. A delete missed while the watch is re-established is not
// acted on: that node's transactions end at Kafka's timeout, as before.

// lostRetry is the pause before watching the membership again after the
// watch broke.
const lostRetry = 500 * time.Millisecond

func (n *Node) watchLost() {
	defer n.wg.Done()
	if n.cfg.NodeLost == nil {
		return
	}
	pfx := n.prefix + "nodes/"
	for n.ctx.Err() == nil {
		for w := range n.cli.Watch(n.ctx, pfx, clientv3.WithPrefix(), clientv3.WithFilterPut()) {
			for _, ev := range w.Events {
				id := strings.TrimPrefix(string(ev.Kv.Key), pfx)
				if ev.Type != clientv3.EventTypeDelete || id == n.cfg.NodeID {
					continue
				}
				n.wg.Add(1)
				go n.fenceLost(id)
			}
		}
		select {
		case <-time.After(lostRetry):
		case <-n.ctx.Done():
		}
	}
}

// fenceLost calls NodeLost for node id unless it is a member again.
func (n *Node) fenceLost(id string) {
	defer n.wg.Done()
	ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
	defer cancel()
	if resp, err := n.cli.Get(ctx, n.prefix+"nodes/"+id, clientv3.WithCountOnly()); err != nil || resp.Count > 0 {
		return
	}
	if err := n.cfg.NodeLost(ctx, id); err != nil {
		n.log.Warn("cluster: ending what a lost node left open", "lost", id, "err", err)
		return
	}
	n.log.Info("cluster: ended what a lost node left open (its Kafka transactions are fenced)", "lost", id)
}
