package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/streamdb/streamdb/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A node whose cluster lease is lost (cut off from etcd longer than
// --cluster-lease-ttl) stops serving as a member: it shuts down as it
// always did (no statement served, its jobs stopped, the engine closed),
// so nothing it does can race the survivors that took its parts over.
// Then it waits until etcd answers again and starts afresh by executing
// itself with the same arguments: a new lease, the catalog log caught up,
// its jobs and parts of distributed views placed again by the coordinator
// (a new generation), exactly as a restart by a supervisor would, without
// one.

// rejoinProbe is how long one probe of etcd may take, and the pause
// between probes.
const rejoinProbe = 2 * time.Second

// rejoinWhenReachable waits until one of etcd's endpoints answers and the
// node's old membership key has expired there, then replaces this process with a new run of the
// same binary and arguments. It returns only if a signal in sigs comes
// first (nil: a requested shutdown) or the exec fails.
func rejoinWhenReachable(c clusterFlags, sigs <-chan os.Signal, log *slog.Logger) error {
	log.Warn("cluster: waiting for etcd to answer again to rejoin as a new member", "etcd", c.etcd)
	eps := strings.Split(c.etcd, ",")
	for {
		if etcdAnswers(eps, cluster.NodeKey(c.name, c.nodeID)) {
			break
		}
		select {
		case sig := <-sigs:
			log.Info("shutting down while waiting for etcd", "signal", sig.String())
			return nil
		case <-time.After(rejoinProbe):
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("the cluster lease was lost and the node cannot start again: %w", err)
	}
	log.Info("cluster: etcd answers again: starting again to rejoin", "etcd", c.etcd)
	err = syscall.Exec(exe, os.Args, os.Environ())
	return fmt.Errorf("the cluster lease was lost and the node cannot start again: exec %s: %w", exe, err)
}

// etcdAnswers reports whether etcd answers within rejoinProbe and no
// longer holds key (the node's membership key under its lost lease).
func etcdAnswers(eps []string, key string) bool {
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: rejoinProbe})
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), rejoinProbe)
	defer cancel()
	resp, err := cli.Get(ctx, key, clientv3.WithCountOnly())
	return err == nil && resp.Count == 0
}
