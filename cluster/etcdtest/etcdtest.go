// Package etcdtest starts an embedded etcd server (go.etcd.io/etcd/server/v3/embed)
// on loopback ports for tests. Only tests import it.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Start runs a one-member etcd with its data in a test directory and
// returns its client URL; the server stops when the test ends.
func Start(t testing.TB) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "test"
	cfg.Dir = t.TempDir()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop()) // its shutdown logs errors that are not
	cfg.UnsafeNoFsync = true
	client, peer := freeURL(t), freeURL(t)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("embedded etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Server.Stop()
		t.Fatal("embedded etcd did not become ready in 30s")
	}
	return client.String()
}

// freeURL picks a free loopback port (closed again at once: the server
// binds it right after).
func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	u, err := url.Parse(fmt.Sprintf("http://%s", addr))
	if err != nil {
		t.Fatal(err)
	}
	return *u
}
