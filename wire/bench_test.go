package wire

import (
	"io"
	"net"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5/pgproto3"
)

// discardConn is a net.Conn whose writes vanish.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkSendRows measures encoding DataRow messages (text and binary)
// for 1024-row batches of (bigint, text).
func BenchmarkSendRows(b *testing.B) {
	for _, bc := range []struct {
		name    string
		formats []int16
	}{{"text", nil}, {"binary", []int16{formatBinary, formatBinary}}} {
		b.Run(bc.name, func(b *testing.B) {
			eng := &fakeEngine{mem: memory.NewCheckedAllocator(memory.NewGoAllocator())}
			ids := make([]int64, 1024)
			names := make([]*string, 1024)
			for i := range ids {
				ids[i] = int64(i) * 1000003
				names[i] = strp("some name")
			}
			batch := eng.batch(ids, names)
			defer batch.Release()
			c := &conn{nc: discardConn{}, be: pgproto3.NewBackend(nil, io.Discard)}
			cols := colsT
			b.ReportAllocs()
			for b.Loop() {
				src := rowSource{cols: cols, formats: bc.formats, batch: batch}
				if err := c.sendDataRows(&src, int(batch.NumRows())); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*float64(batch.NumRows())/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
