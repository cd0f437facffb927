package lint

import (
	"path/filepath"
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
	for name, n := range methodCounts(t, filepath.Join("..", "..", "storage")) {
		if n > maxMethods {
			t.Errorf("storage.%s has %d methods, more than %d: move a concern onto a type of its own", name, n, maxMethods)
		}
	}
}
