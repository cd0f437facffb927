package bind

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/planner"
)

func TestTextScale(t *testing.T) {
	for _, tc := range []struct {
		in    string
		scale int32
		ok    bool
	}{
		{"1.50", 2, true},
		{" -0.0 ", 1, true},
		{"12", 0, true},
		{".5", 1, true},
		{"5.", 0, true},
		{"1.5e1", 0, true},
		{"1.50e1", 1, true},
		{"2e-3", 3, true},
		{"+1.25E-2", 4, true},
		{"1e", 0, false},
		{"abc", 0, false},
		{"1.2.3", 0, false},
		{"", 0, false},
		{"NaN", 0, false},
	} {
		s, ok := textScale(tc.in)
		if s != tc.scale || ok != tc.ok {
			t.Errorf("textScale(%q) = %d, %v; want %d, %v", tc.in, s, ok, tc.scale, tc.ok)
		}
	}
}

// TestAvgDistinctArgScale checks that avg(DISTINCT x) of a NUMERIC x
// de-duplicates x at its own scale, as avg(x) sums it, and that a view
// created before that (AvgDistinctAtAvgScale) is bound as it was, x cast
// to the average's type, so the values its state holds still read.
func TestAvgDistinctArgScale(t *testing.T) {
	argScales := func(b *Binder) []int32 {
		t.Helper()
		p, err := b.BindQuery(parseOne(t, "select avg(distinct x), avg(x) from t").(ast.ResultSetNode))
		if err != nil {
			t.Fatal(err)
		}
		for n := planner.Node(p); ; n = n.Children()[0] {
			if a, ok := n.(*planner.Aggregate); ok {
				return []int32{a.Aggs[0].Arg.Type().Scale, a.Aggs[1].Arg.Type().Scale}
			}
			if len(n.Children()) == 0 {
				break
			}
		}
		t.Fatal("no Aggregate")
		return nil
	}
	if got := argScales(&Binder{Cat: testCatalog()}); got[0] != 2 || got[1] != 2 {
		t.Errorf("argument scales %v, want [2 2] (numeric(10,2)'s own)", got)
	}
	if got := argScales(&Binder{Cat: testCatalog(), AvgDistinctAtAvgScale: true}); got[0] != 20 || got[1] != 2 {
		t.Errorf("argument scales in an old view %v, want [20 2] (DISTINCT at the average's 20)", got)
	}
}
