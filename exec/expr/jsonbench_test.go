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

// jsonbBatch is one JSONB column of event payloads (about 120 bytes of
// text each, six keys, a nested object), stored by the column's input function.
func jsonbBatch(b *testing.B, mem memory.Allocator) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(3, 4))
	jb := array.NewStringBuilder(mem)
	defer jb.Release()
	for i := 0; i < benchRows; i++ {
		doc := `{"user": "u` + strconv.Itoa(r.IntN(1000)) + `", "price": ` + strconv.Itoa(r.IntN(10000)) + `.` + strconv.Itoa(10+r.IntN(90)) +
			`, "qty": ` + strconv.Itoa(r.IntN(10)) + `, "tags": ["a", "b"], "ts": "2026-12-07T00:00:00", "ctx": {"ip": "10.0.0.1", "ok": true}}`
		d, err := types.ParseText(doc, types.TJSONB)
		if err != nil {
			b.Fatal(err)
		}
		jb.Append(d.S)
	}
	col := jb.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "j", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{col}, benchRows)
}

func benchJSONB(b *testing.B, e Expr) {
	mem := memory.NewGoAllocator()
	benchEvalOn(b, e, mem, jsonbBatch(b, mem))
}

func jsonbConst(b *testing.B, s string) *Const {
	d, err := types.ParseText(s, types.TJSONB)
	if err != nil {
		b.Fatal(err)
	}
	return &Const{D: d, T: types.TJSONB}
}

var bj = &ColRef{Idx: 0, T: types.TJSONB, Name: "j"}

// BenchmarkJSONBGetText is payload->>'price' over a batch.
func BenchmarkJSONBGetText(b *testing.B) {
	benchJSONB(b, &Func{Name: "->>", Args: []Expr{bj, &Const{D: types.Str("price"), T: types.TText}}, T: types.TText})
}

// BenchmarkJSONBGetNested is payload->'ctx'->>'ip' over a batch.
func BenchmarkJSONBGetNested(b *testing.B) {
	inner := &Func{Name: "->", Args: []Expr{bj, &Const{D: types.Str("ctx"), T: types.TText}}, T: types.TJSONB}
	benchJSONB(b, &Func{Name: "->>", Args: []Expr{inner, &Const{D: types.Str("ip"), T: types.TText}}, T: types.TText})
}

// BenchmarkJSONBContains is payload @> '{"ctx": {"ok": true}, "qty": 3}' over a batch.
func BenchmarkJSONBContains(b *testing.B) {
	benchJSONB(b, &Func{Name: "@>", Args: []Expr{bj, jsonbConst(b, `{"ctx": {"ok": true}, "qty": 3}`)}, T: types.TBool})
}
