package exec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// keyedRec builds a (k BIGINT, v TEXT) batch.
func keyedRec(rows ...string) arrow.RecordBatch {
	kb := array.NewInt64Builder(memoryPool)
	vb := array.NewStringBuilder(memoryPool)
	defer kb.Release()
	defer vb.Release()
	for _, r := range rows {
		var k int64
		var v string
		fmt.Sscanf(r, "%d=%s", &k, &v)
		kb.Append(k)
		vb.Append(v)
	}
	return plan.RecordOf([]types.T{types.TInt64, types.TText}, []arrow.Array{kb.NewArray(), vb.NewArray()}, len(rows))
}

// keyedText renders a KeyedRows' rows, and a Changes' ops, as text.
func keyedText(k *plan.KeyedRows, ch *plan.Changes) string {
	var b strings.Builder
	rec := k.Record(memoryPool)
	defer rec.Release()
	for i := 0; i < int(rec.NumRows()); i++ {
		fmt.Fprintf(&b, "%d=%s ", rec.Column(0).(*array.Int64).Value(i), rec.Column(1).(*array.String).Value(i))
	}
	if ch != nil {
		b.WriteString("|")
		log := k.ChangesRecord(ch)
		defer log.Release()
		for i := 0; i < int(log.NumRows()); i++ {
			fmt.Fprintf(&b, " %s %d=%s", Op(log.Column(2).(*array.Int64).Value(i)), log.Column(0).(*array.Int64).Value(i), log.Column(1).(*array.String).Value(i))
		}
	}
	return strings.TrimSpace(b.String())
}

// TestKeyedRows nets INSERT, upserts, UPDATE (a key moving into one another
// row gives up) and DELETE, checks the log rows each writes, that netting
// those log rows gives the same rows, and that nothing leaks.
func TestKeyedRows(t *testing.T) {
	withChecked(t)
	def := &storage.TableDef{Name: "t", Kind: storage.KindStream, KeyCols: []int{0},
		Columns: []storage.ColumnDef{{Name: "k", Type: types.TInt64, NotNull: true}, {Name: "v", Type: types.TText}}}
	k := plan.NewKeyedRows(nil, def)
	replay := plan.NewKeyedRows(nil, def)
	apply := func(ch *plan.Changes) {
		log := k.ChangesRecord(ch)
		replay.Apply(log)
		log.Release()
	}
	in := keyedRec("1=a", "2=b")
	ch, n, err := k.Insert(in, plan.ConflictError, nil)
	in.Release()
	if err != nil || n != 2 {
		t.Fatal(n, err)
	}
	apply(ch)
	if got, want := keyedText(k, ch), "1=a 2=b | insert 1=a insert 2=b"; got != want {
		t.Errorf("insert: %s, want %s", got, want)
	}

	dup := keyedRec("3=c", "2=x")
	_, _, err = plan.NewKeyedRowsFrom(k).Insert(dup, plan.ConflictError, nil)
	if e := sqlerr.As(err); e == nil || e.Code != sqlerr.UniqueViolation || e.Detail != "Key (k)=(2) already exists." {
		t.Errorf("duplicate: %v", err)
	}
	ch, n, err = k.Insert(dup, plan.ConflictNothing, nil)
	if err != nil || n != 1 {
		t.Fatal(n, err)
	}
	apply(ch)
	if got, want := keyedText(k, ch), "1=a 2=b 3=c | insert 3=c"; got != want {
		t.Errorf("do nothing: %s, want %s", got, want)
	}
	dup.Release()
	up := keyedRec("2=x", "5=e")
	ch, n, err = k.Insert(up, plan.ConflictUpdate, func(pairs arrow.RecordBatch) (arrow.RecordBatch, []bool, error) {
		// SET v = EXCLUDED.v: the existing row's k, the proposed row's v.
		c0, c1 := pairs.Column(0), pairs.Column(3)
		c0.Retain()
		c1.Retain()
		return plan.RecordOf([]types.T{types.TInt64, types.TText}, []arrow.Array{c0, c1}, int(pairs.NumRows())), nil, nil
	})
	up.Release()
	if err != nil || n != 2 {
		t.Fatal(n, err)
	}
	apply(ch)
	if got, want := keyedText(k, ch), "1=a 2=x 3=c 5=e | update_before 2=b update_after 2=x insert 5=e"; got != want {
		t.Errorf("do update: %s, want %s", got, want)
	}

	// 1 → 2 and 2 → 3 in one statement: legal at its end.
	olds, news := keyedRec("1=a", "2=x", "3=c"), keyedRec("2=a", "3=x", "4=c")
	ch, err = k.Update(olds, news)
	olds.Release()
	news.Release()
	if err != nil {
		t.Fatal(err)
	}
	apply(ch)
	if got, want := keyedText(k, ch), "2=a 3=x 4=c 5=e | delete 1=a delete 2=x delete 3=c insert 2=a insert 3=x insert 4=c"; got != want {
		t.Errorf("update keys: %s, want %s", got, want)
	}
	olds, news = keyedRec("2=a"), keyedRec("3=z")
	_, err = plan.NewKeyedRowsFrom(k).Update(olds, news)
	olds.Release()
	news.Release()
	if sqlerr.Code(err) != sqlerr.UniqueViolation {
		t.Errorf("update onto a kept key: %v", err)
	}

	del := keyedRec("3=x", "9=none")
	ch = k.Delete(del)
	del.Release()
	apply(ch)
	if got, want := keyedText(k, ch), "2=a 4=c 5=e | delete 3=x"; got != want {
		t.Errorf("delete: %s, want %s", got, want)
	}
	if got, want := keyedText(replay, nil), keyedText(k, nil); got != want {
		t.Errorf("netting the log rows: %s, want %s", got, want)
	}
}
