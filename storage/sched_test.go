package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestOpeningScheduler: with L0 deep enough to compact, no compaction runs
// until opened is called (Pebble's Open would wait for it), and then the
// waiting ones do.
func TestOpeningScheduler(t *testing.T) {
	fs := vfs.NewMem()
	opts := func(s pebble.CompactionScheduler) *pebble.Options {
		o := &pebble.Options{FS: fs, L0CompactionThreshold: 2, Logger: quietLogger{}}
		o.Experimental.CompactionScheduler = s
		return o
	}
	s := newOpeningScheduler()
	pdb, err := pebble.Open("db", opts(s))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 { // 8 overlapping L0 files
		for k := range 100 {
			if err := pdb.Set(fmt.Appendf(nil, "k%03d", k), fmt.Appendf(nil, "v%d", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := pdb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // the periodic grant runs 3 times
	if m := pdb.Metrics(); m.Compact.Count != 0 || m.Compact.NumInProgress != 0 || m.Levels[0].TablesCount != 8 {
		t.Fatalf("before opened: %d compactions done, %d running, %d L0 files", m.Compact.Count, m.Compact.NumInProgress, m.Levels[0].TablesCount)
	}
	s.opened()
	deadline := time.Now().Add(10 * time.Second)
	for pdb.Metrics().Compact.Count == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no compaction ran within 10 s of opened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v, closer, err := pdb.Get([]byte("k042")); err != nil || string(v) != "v7" {
		t.Fatalf("after compaction k042 = %q, %v", v, err)
	} else {
		closer.Close()
	}
	if err := pdb.Close(); err != nil {
		t.Fatal(err)
	}
}
