package exec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// upstreamRec is a CDC batch of (k, v, op) rows; v < 0 is NULL (a
// key-only old tuple).
func upstreamRec(rows ...[3]int64) arrow.RecordBatch {
	kb, vb, ob := array.NewInt64Builder(memoryPool), array.NewInt64Builder(memoryPool), array.NewInt64Builder(memoryPool)
	for _, r := range rows {
		kb.Append(r[0])
		if r[1] < 0 {
			vb.AppendNull()
		} else {
			vb.Append(r[1])
		}
		ob.Append(r[2])
	}
	return plan.RecordOf([]types.T{types.TInt64, types.TInt64, types.TInt64},
		[]arrow.Array{kb.NewArray(), vb.NewArray(), ob.NewArray()}, len(rows))
}

func changesText(k *plan.KeyedRows, ch *plan.Changes) string {
	rec := k.ChangesRecord(ch)
	defer rec.Release()
	var out []string
	for i := 0; i < int(rec.NumRows()); i++ {
		out = append(out, fmt.Sprintf("%v/%v/%d", rec.Column(0).ValueStr(i), rec.Column(1).ValueStr(i), rec.Column(2).(*array.Int64).Value(i)))
	}
	return strings.Join(out, " ")
}

// TestApplyUpstream: a CDC source's deletes carry the whole row held for
// the key, updates become pairs, and a delete of an absent key is dropped.
func TestApplyUpstream(t *testing.T) {
	def := &storage.TableDef{Name: "t", Kind: storage.KindStream, Partitions: 1, KeyCols: []int{0},
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64, NotNull: true}, {Name: "v", Type: types.TInt64}}}
	k := plan.CachedKeyedRows(def)
	ins, del, ua := int64(OpInsert), int64(OpDelete), int64(OpUpdateAfter)
	for _, tc := range []struct {
		rows [][3]int64
		want string
	}{
		{[][3]int64{{1, 10, ins}, {2, 20, ins}}, fmt.Sprintf("1/10/%d 2/20/%d", ins, ins)},
		{[][3]int64{{1, -1, del}, {2, 25, ua}, {9, -1, del}}, fmt.Sprintf("1/10/%d 2/20/%d 2/25/%d", del, OpUpdateBefore, ua)},
		{[][3]int64{{2, -1, del}, {3, 25, ins}}, fmt.Sprintf("2/25/%d 3/25/%d", del, ins)},
	} {
		rec := upstreamRec(tc.rows...)
		got := changesText(k, k.ApplyUpstream(rec))
		rec.Release()
		if got != tc.want {
			t.Fatalf("%v: got %s, want %s", tc.rows, got, tc.want)
		}
	}
	if k.Len() != 1 {
		t.Fatalf("%d rows held, want 1", k.Len())
	}
}
