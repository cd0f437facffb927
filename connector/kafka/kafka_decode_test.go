package kafka

import (
	"fmt"
	"github.com/streamdb/streamdb/connector"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// decodeReader is a reader of a stored source (no broker is asked) that
// only decodes.
func decodeReader(tb testing.TB, format string, cols []connector.Column) *kafkaReader {
	tb.Helper()
	c, err := connector.New(cols, map[string]string{"connector": "kafka", "topic": "t", "properties.bootstrap.servers": "127.0.0.1:9092",
		"__splits": "1", "format": format})
	if err != nil {
		tb.Fatal(err)
	}
	return &kafkaReader{c: c.(*kafka)}
}

var benchCols = []connector.Column{{Name: "user_id", Type: types.TInt64}, {Name: "url", Type: types.TText},
	{Name: "ts", Type: types.TTimestamp}, {Name: "price", Type: types.TFloat64}, {Name: "_kafka_offset", Type: types.TInt64}}

func benchRecords(format string, n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		var v string
		if format == "csv" {
			v = fmt.Sprintf(`%d,/page/%d?q=x,2026-01-01 00:00:%02d,%d.25`, i%1000, i%97, i%60, i%500)
		} else {
			v = fmt.Sprintf(`{"user_id": %d, "url": "/page/%d?q=x", "ts": "2026-01-01 00:00:%02d", "price": %d.25, "extra": {"a": [1, 2, "x"]}}`, i%1000, i%97, i%60, i%500)
		}
		recs[i] = &kgo.Record{Value: []byte(v), Offset: int64(i), Timestamp: time.UnixMilli(1e12)}
	}
	return recs
}

// BenchmarkKafkaDecode decodes batches of 4096 messages into Arrow columns
// (go test ./source -bench KafkaDecode -benchmem): ns and allocations per
// message are the figures of docs/BENCHMARKS.md.
func BenchmarkKafkaDecode(b *testing.B) {
	for _, format := range []string{"json", "csv"} {
		b.Run(format, func(b *testing.B) {
			r := decodeReader(b, format, benchCols)
			recs := benchRecords(format, 4096)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec := r.decodeBatch(memory.DefaultAllocator, recs)
				if rec.NumRows() != int64(len(recs)) || len(r.TakeBad()) != 0 {
					b.Fatalf("decoded %d of %d", rec.NumRows(), len(recs))
				}
				rec.Release()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/msg")
			b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
