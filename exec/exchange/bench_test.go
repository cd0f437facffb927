package exchange

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/streamdb/streamdb/exec/op"
)

// BenchmarkExchange sends batches of 8192 (k, v) rows over one stream on
// loopback (the peer listener's HTTP/2 path) with the default window.
func BenchmarkExchange(b *testing.B) {
	n := startNode(b)
	in := openInbox(b, n, "bench", 0, 0, 1, DefaultWindow)
	s, err := Dial(context.Background(), n.cc, StreamID{"bench", 0, 0, 0}, schemaKV())
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]int64, 8192)
	for i := range keys {
		keys[i] = int64(i)
	}
	rec := batch(keys, 0)
	defer rec.Release()
	b.SetBytes(8192 * 16)
	b.ResetTimer()
	go func() {
		ctx := context.Background()
		for range b.N {
			rec.Retain()
			if err := s.Send(ctx, op.Chunk{Rec: rec}); err != nil {
				b.Error(err)
				return
			}
		}
		_ = s.Close(ctx)
	}()
	for {
		it, err := in.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		it.Chunk.Rec.Release()
	}
}
