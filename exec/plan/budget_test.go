package plan_test

import (
	"testing"

	"github.com/streamdb/streamdb/exec/batch/batchtest"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
)

func TestBudgetCountsBuffers(t *testing.T) {
	b := plan.NewBudget(1<<20, nil)
	mem := b.Allocator()
	buf := mem.Allocate(1000)
	if b.Used() != 1000 {
		t.Fatalf("after Allocate(1000): %d", b.Used())
	}
	buf = mem.Reallocate(5000, buf)
	b.Grow(24)
	if b.Used() != 5024 {
		t.Fatalf("after Reallocate(5000) and Grow(24): %d", b.Used())
	}
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	mem.Free(buf)
	b.Grow(-24)
	if b.Used() != 0 || b.Peak() != 5024 {
		t.Fatalf("after Free: used %d, peak %d; want 0 and 5024", b.Used(), b.Peak())
	}
	b.Grow(2 << 20)
	e := batchtest.WantCode(t, b.Check(), sqlerr.OutOfMemory)
	if e.Msg != "out of memory" || e.Detail == "" || e.Hint == "" {
		t.Fatalf("error: %+v", e)
	}
}

func TestMemPoolCapsAllQueries(t *testing.T) {
	pool := plan.NewMemPool(10 << 20)
	a, b := plan.NewBudget(0, pool), plan.NewBudget(0, pool)
	a.Grow(6 << 20)
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	b.Grow(6 << 20)
	batchtest.WantCode(t, b.Check(), sqlerr.OutOfMemory)
	if pool.Used() != 12<<20 {
		t.Fatalf("pool holds %d", pool.Used())
	}
	a.Close()
	a.Close() // a second Close returns nothing more
	if err := b.Check(); err != nil {
		t.Fatalf("after the other query closed: %v", err)
	}
	b.Close()
	if pool.Used() != 0 {
		t.Fatalf("pool holds %d after every query closed", pool.Used())
	}
}

func TestFormatMemory(t *testing.T) {
	for n, want := range map[int64]string{64 << 10: "64kB", 1 << 30: "1GB", 1536 << 10: "1536kB", 3 << 40: "3TB", 100: "100B"} {
		if got := plan.FormatMemory(n); got != want {
			t.Errorf("FormatMemory(%d) = %s, want %s", n, got, want)
		}
	}
}
