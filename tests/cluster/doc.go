// Package cluster holds streamdb's cluster-mode tests (issue 29): each
// test hosts embedded etcd (or Debian's etcd binary), an in-process Kafka
// (kfake) and an in-process S3 (gofakes3) on loopback, starts real
// streamdb processes with --cluster-etcd, drives them over the PostgreSQL
// wire protocol and kills, stops, partitions and restarts them: catalog
// replication, job assignment and failover, the shared stream log,
// shared checkpoints, CHECKPOINT, savepoints and rebalancing, scaling,
// fencing, and a node cut off from etcd. The views are checked against a
// single-node server's batch query and a ledger of acknowledged rows.
//
// The process and service helpers are tests/sqllogic's (as for
// tests/crash). See docs/design/cluster.md.
//
// The package has no non-test code; this file only carries the comment.
package cluster
