package exec

import (
	"testing"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// TestCheckArrayLayout: a view from before typed lists with an integer[]
// column is refused with 0A000; text[] columns and new views run.
func TestCheckArrayLayout(t *testing.T) {
	cols := []storage.ColumnDef{{Name: "a", Type: types.ArrayOf(types.Int32)}}
	old := &storage.TableDef{Name: "v", Kind: storage.KindView, Columns: cols, KeyFormat: storage.KeyFormatJSONB}
	if err := CheckArrayLayout(old); sqlerr.Code(err) != sqlerr.FeatureNotSupported {
		t.Fatalf("old view with int4[]: %v", err)
	}
	old.Columns = []storage.ColumnDef{{Name: "a", Type: types.TTextArray}}
	if err := CheckArrayLayout(old); err != nil {
		t.Fatalf("old view with text[]: %v", err)
	}
	fresh := &storage.TableDef{Name: "v", Kind: storage.KindView, Columns: cols, KeyFormat: storage.KeyFormatTypedArrays}
	if err := CheckArrayLayout(fresh); err != nil {
		t.Fatalf("new view: %v", err)
	}
}
