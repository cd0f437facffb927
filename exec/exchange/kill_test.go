package exchange

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/streamdb/streamdb/exec/op"
)

// TestSenderKilled: the sender is another process, killed with SIGKILL
// mid-stream; the receiver's Next fails (it does not see an end of input).
func TestSenderKilled(t *testing.T) {
	n := startNode(t)
	in := openInbox(t, n, "kill", 0, 0, 1, 4)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSenderProcess$")
	cmd.Env = append(os.Environ(), "EXCHANGE_HELPER_ADDR="+n.addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 20 { // the sender is streaming
		it, err := in.Next(ctx)
		if err != nil {
			_ = cmd.Process.Kill()
			t.Fatalf("batch %d: %v", i, err)
		}
		if it.Chunk.Rec != nil {
			it.Chunk.Rec.Release()
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for {
		it, err := in.Next(ctx)
		if err == nil {
			if it.Chunk.Rec != nil { // buffered before the kill
				it.Chunk.Rec.Release()
			}
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("after the sender was killed: %v, want the broken stream's error", err)
		}
		t.Log(err)
		return
	}
}

// TestHelperSenderProcess is TestSenderKilled's sender, run as a process
// of its own: it streams batches until killed.
func TestHelperSenderProcess(t *testing.T) {
	addr := os.Getenv("EXCHANGE_HELPER_ADDR")
	if addr == "" {
		t.Skip("the sender process of TestSenderKilled")
	}
	cc, err := Conn(addr)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Dial(context.Background(), cc, StreamID{"kill", 0, 0, 0}, schemaKV())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if err := s.Send(context.Background(), op.Chunk{Rec: batch([]int64{1, 2, 3}, int64(i))}); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			_ = s.Barrier(context.Background(), &op.Barrier{Epoch: uint64(i/1000 + 1)}, op.Watermark{At: op.NoWatermark})
		}
	}
}
