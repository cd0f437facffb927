package lint

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestStorageTypesStaySmall holds every type of package storage to
// maxMethods (issue 28). storage.DB keeps the engine's plumbing (open,
// batches, snapshots, maintenance) and reaches each concern through a type
// of its own that holds only that concern's methods: db.Log(), db.State(),
// db.Memory(), db.Stages(), db.Epochs(), db.Views(), db.Positions(),
// db.Errors(), db.Catalog() (docs/decisions/2026-12-07-storage-facets.md).
// A concern that outgrows the limit is split again, not allowed more.
func TestStorageTypesStaySmall(t *testing.T) {
	counts := methodCounts(t, filepath.Join("..", "..", "storage"))
	var names []string
	for name := range counts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if n := counts[name]; n > maxMethods {
			t.Errorf("storage.%s has %d methods, more than %d: move a concern onto a type of its own", name, n, maxMethods)
		}
	}
}

// eachImportWithTests is eachImport over every file, tests included.
func eachImportWithTests(t *testing.T, fn func(pkg, file, path string)) {
	t.Helper()
	fset := token.NewFileSet()
	for pkg, files := range packages(t) {
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				fn(pkg, f, strings.Trim(imp.Path.Value, `"`))
			}
		}
	}
}
