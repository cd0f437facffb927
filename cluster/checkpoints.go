package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Checkpoint pointers (contract 7, docs/design/cluster.md): ckpt/<view>
// holds where the last committed checkpoint of the view's job is in the
// cluster's checkpoint storage (S3): the node that took it, its epoch and
// checkpoint id, and the manifest's location. Only a pointer: the state,
// rows and manifest stay in S3. The node that runs the job writes it after
// each upload, in a transaction conditioned on the job's assignment (the
// jobs/<view> key still names this node at the mod revision under which
// the node started the job), so a node that lost the job, even one that
// comes back from the dead with a checkpoint in flight, cannot move the
// pointer back. A node that is given the job restores from the pointer.

// Pointer is one job's committed checkpoint in checkpoint storage.
type Pointer struct {
	Node         string    `json:"node"`           // the node that took and uploaded it
	AssignRev    int64     `json:"assign_rev"`     // the mod revision of jobs/<view> it ran under
	JobCreateRev int64     `json:"job_create_rev"` // the create revision of jobs/<view>: a new view of the same name has another
	CheckpointID uint64    `json:"checkpoint_id"`
	Epoch        uint64    `json:"epoch"`
	Storage      string    `json:"storage"`  // the node's checkpoint storage URL
	Manifest     string    `json:"manifest"` // the snapshot's key prefix there (checkpoints/chk-N)
	JobID        uint64    `json:"job_id"`   // the job's id in the snapshot
	At           time.Time `json:"at"`
}

// ErrFenced is a pointer write refused because the job's assignment moved
// on since this node started it.
var ErrFenced = errors.New("cluster: checkpoint pointer refused: the job is no longer assigned to this node at the revision it started under")

// Assignment is this node's claim on a job: the revisions of jobs/<view>
// as this node last read it, when it names this node.
func (n *Node) Assignment(view string) (modRev, createRev int64, ok bool) {
	n.assign.mu.Lock()
	defer n.assign.mu.Unlock()
	if n.assign.owner[view] != n.cfg.NodeID {
		return 0, 0, false
	}
	return n.assign.rev[view], n.assign.create[view], true
}

func (n *Node) pointerKey(view string) string { return n.prefix + "ckpt/" + view }

// CommitPointer writes p as view's committed checkpoint if jobs/<view>
// still names this node at mod revision p.AssignRev (ErrFenced if not).
func (n *Node) CommitPointer(ctx context.Context, view string, p Pointer) error {
	p.Node, p.At = n.cfg.NodeID, time.Now().UTC()
	v, _ := json.Marshal(p)
	key := n.prefix + "jobs/" + view
	resp, err := n.cli.Txn(ctx).If(
		clientv3.Compare(clientv3.Value(key), "=", n.cfg.NodeID),
		clientv3.Compare(clientv3.ModRevision(key), "=", p.AssignRev),
		clientv3.Compare(clientv3.CreateRevision(key), "=", p.JobCreateRev),
	).Then(clientv3.OpPut(n.pointerKey(view), string(v))).Commit()
	if err != nil {
		return fmt.Errorf("cluster: checkpoint pointer of %s: %w", view, err)
	}
	if !resp.Succeeded {
		return ErrFenced
	}
	return nil
}

// ReadPointer returns view's committed checkpoint; nil if there is none,
// or if it belongs to an earlier job of the same name (another create
// revision of jobs/<view>).
func (n *Node) ReadPointer(ctx context.Context, view string) (*Pointer, error) {
	resp, err := n.cli.Txn(ctx).Then(clientv3.OpGet(n.pointerKey(view)), clientv3.OpGet(n.prefix+"jobs/"+view)).Commit()
	if err != nil {
		return nil, fmt.Errorf("cluster: checkpoint pointer of %s: %w", view, err)
	}
	pk, jk := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
	if len(pk) == 0 || len(jk) == 0 {
		return nil, nil
	}
	var p Pointer
	if err := json.Unmarshal(pk[0].Value, &p); err != nil {
		return nil, fmt.Errorf("cluster: checkpoint pointer of %s: %w", view, err)
	}
	if p.JobCreateRev != jk[0].CreateRevision {
		return nil, nil
	}
	return &p, nil
}

// dropPointerOp deletes view's pointer with its assignment (reassign).
func (n *Node) dropPointerOp(view string) clientv3.Op { return clientv3.OpDelete(n.pointerKey(view)) }
