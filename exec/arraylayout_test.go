package exec

import (
	"testing"

	"github.com/streamdb/streamdb/exec/plan"
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

// TestCheckNumericLayout: a view from before per-value numeric scales whose
// plan computes an unconstrained numeric is refused with 0A000; one with
// only numeric(p,s) and new views run.
func TestCheckNumericLayout(t *testing.T) {
	scan := func(ty types.T) plan.Plan {
		return &plan.ScanStream{Table: &storage.TableDef{Name: "s", Columns: []storage.ColumnDef{{Name: "x", Type: ty}}}}
	}
	old := &storage.TableDef{Name: "v", Kind: storage.KindView, KeyFormat: storage.KeyFormatTypedArrays}
	if err := CheckNumericLayout(old, scan(types.TNumeric)); sqlerr.Code(err) != sqlerr.FeatureNotSupported {
		t.Fatalf("old view over unconstrained numeric: %v", err)
	}
	if err := CheckNumericLayout(old, scan(types.NumericOf(10, 2))); err != nil {
		t.Fatalf("old view over numeric(10,2): %v", err)
	}
	fresh := &storage.TableDef{Name: "v", Kind: storage.KindView, KeyFormat: storage.KeyFormatCurrent}
	if err := CheckNumericLayout(fresh, scan(types.TNumeric)); err != nil {
		t.Fatalf("new view: %v", err)
	}
}

// TestCheckUUIDLayout: a view from before uuid was stored as 16 bytes
// whose plan carries a uuid (or uuid[]) is refused with 0A000; one
// without uuid and new views run.
func TestCheckUUIDLayout(t *testing.T) {
	scan := func(ty types.T) plan.Plan {
		return &plan.ScanStream{Table: &storage.TableDef{Name: "s", Columns: []storage.ColumnDef{{Name: "x", Type: ty}}}}
	}
	old := &storage.TableDef{Name: "v", Kind: storage.KindView, KeyFormat: storage.KeyFormatNumericDScale}
	for _, ty := range []types.T{types.TUUID, types.ArrayOf(types.UUID)} {
		if err := CheckUUIDLayout(old, scan(ty)); sqlerr.Code(err) != sqlerr.FeatureNotSupported {
			t.Fatalf("old view over %s: %v", ty, err)
		}
	}
	if err := CheckUUIDLayout(old, scan(types.TText)); err != nil {
		t.Fatalf("old view over text: %v", err)
	}
	fresh := &storage.TableDef{Name: "v", Kind: storage.KindView, KeyFormat: storage.KeyFormatCurrent}
	if err := CheckUUIDLayout(fresh, scan(types.TUUID)); err != nil {
		t.Fatalf("new view: %v", err)
	}
}
