package cluster

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Savepoint records (contract 8, docs/design/cluster.md): savepoints/<name>
// holds where the parts of a cluster savepoint are in checkpoint storage
// (each node's part: its snapshot of the jobs it ran, under its own
// prefix). Only a pointer, as for checkpoints; the value is the caller's
// (JSON). A name is taken once: PutSavepoint succeeds only for a new key,
// so two nodes taking the same savepoint cannot both record it.

func (n *Node) savepointKey(name string) string { return n.prefix + "savepoints/" + name }

// PutSavepoint records savepoint name with value v, unless a savepoint of
// that name exists (ok false).
func (n *Node) PutSavepoint(ctx context.Context, name string, v []byte) (ok bool, err error) {
	key := n.savepointKey(name)
	resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(v))).Commit()
	if err != nil {
		return false, fmt.Errorf("cluster: savepoint %s: %w", name, err)
	}
	return resp.Succeeded, nil
}

// Savepoints returns every savepoint record by name.
func (n *Node) Savepoints(ctx context.Context) (map[string][]byte, error) {
	pfx := n.prefix + "savepoints/"
	resp, err := n.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: savepoints: %w", err)
	}
	out := map[string][]byte{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), pfx)] = kv.Value
	}
	return out, nil
}

// DeleteSavepoint deletes savepoint name's record; ok is false if there
// was none.
func (n *Node) DeleteSavepoint(ctx context.Context, name string) (ok bool, err error) {
	resp, err := n.cli.Delete(ctx, n.savepointKey(name))
	if err != nil {
		return false, fmt.Errorf("cluster: savepoint %s: %w", name, err)
	}
	return resp.Deleted > 0, nil
}
