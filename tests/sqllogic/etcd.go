package sqllogic

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// StartEtcdBinary runs a one-member etcd from bin on loopback ports and
// returns its client URL; it is killed when the test ends.
func StartEtcdBinary(t *testing.T, bin string) string {
	t.Helper()
	ca, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	pa, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	client, peer := "http://"+ca, "http://"+pa
	var out outputLog
	cmd := exec.Command(bin, "--name", "t", "--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "t="+peer,
		"--unsafe-no-fsync")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("etcd output:\n%s", out.tail(16<<10))
		}
	})
	// A quiet client: it logs every refused dial while etcd starts.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "health")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd (%s) does not answer within 30s: %v", bin, err)
		}
	}
	return client
}
