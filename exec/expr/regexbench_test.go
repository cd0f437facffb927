package expr

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/types"
)

// urlBatch has one TEXT column of URLs as Nexmark's bids carry them: half
// plain, half with a "&channel_id=N" parameter.
func urlBatch(mem memory.Allocator) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(3, 4))
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	word := func() string {
		b := make([]byte, 1+r.IntN(5))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}
	for i := 0; i < benchRows; i++ {
		u := "https://www.nexmark.com/" + word() + "/" + word() + "/" + word() + "/item.htm?query=1"
		if r.IntN(2) == 0 {
			u += "&channel_id=" + strconv.Itoa(r.IntN(1<<30))
		}
		sb.Append(u)
	}
	col := sb.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "url", Type: arrow.BinaryTypes.String}}, nil),
		[]arrow.Array{col}, benchRows)
}

// BenchmarkRegexpMatchURL is Nexmark q21's regexp_match(url,
// '(&|^)channel_id=([^&]*)') over urlBatch; BenchmarkRegexTestURL the same
// pattern with ~.
func BenchmarkRegexpMatchURL(b *testing.B) {
	mem := memory.NewGoAllocator()
	url := &ColRef{Idx: 0, T: types.TText, Name: "url"}
	benchEvalOn(b, fn("regexp_match", types.TTextArray, url, cs("(&|^)channel_id=([^&]*)")), mem, urlBatch(mem))
}

func BenchmarkRegexTestURL(b *testing.B) {
	mem := memory.NewGoAllocator()
	url := &ColRef{Idx: 0, T: types.TText, Name: "url"}
	benchEvalOn(b, fn("regex_test", types.TBool, url, cs("(&|^)channel_id=([^&]*)")), mem, urlBatch(mem))
}
