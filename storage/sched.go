package storage

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// openingScheduler grants Pebble's compactions as its default scheduler
// does (as many at once as the DB asks to run, GetAllowedWithoutPermission),
// but none until opened is called, after Open returns. Pebble's Open picks
// a compaction as soon as it has replayed the WAL and then waits for the
// running ones before it returns: after a crash under load, with many L0
// files, that one compaction kept the server from serving for 1-3 s
// (docs/BENCHMARKS.md, TestRecoveryTime). Started once the server is up,
// the same compactions cost nothing in the recovery time.
type openingScheduler struct {
	db   pebble.DBForCompaction
	poke chan struct{}
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	open    bool
	running int
}

var _ pebble.CompactionScheduler = (*openingScheduler)(nil)

func newOpeningScheduler() *openingScheduler {
	return &openingScheduler{poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// opened lets compactions run, starting with any the DB is waiting with.
func (s *openingScheduler) opened() {
	s.mu.Lock()
	s.open = true
	s.mu.Unlock()
	s.wake()
}

// Register starts the goroutine that grants waiting compactions: when a
// compaction ends, when the DB says it may run more, and every 100 ms.
func (s *openingScheduler) Register(_ int, db pebble.DBForCompaction) {
	s.db = db
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			case <-s.poke:
			}
			s.grant()
		}
	}()
}

// Unregister stops granting; when it returns no call to the DB is under way.
func (s *openingScheduler) Unregister() {
	close(s.stop)
	<-s.done
}

// TrySchedule is the DB asking to run a compaction now.
func (s *openingScheduler) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open || s.running >= s.db.GetAllowedWithoutPermission() {
		return false, nil // the DB keeps it waiting; grant offers it later
	}
	s.running++
	return true, s
}

func (s *openingScheduler) UpdateGetAllowedWithoutPermission() { s.wake() }

func (s *openingScheduler) wake() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// grant starts waiting compactions while the DB allows more to run.
func (s *openingScheduler) grant() {
	for {
		s.mu.Lock()
		room := s.open && s.running < s.db.GetAllowedWithoutPermission()
		if room {
			s.running++
		}
		s.mu.Unlock()
		if !room {
			return
		}
		if waiting, _ := s.db.GetWaitingCompaction(); !waiting || !s.db.Schedule(s) {
			s.release()
			return
		}
	}
}

func (s *openingScheduler) release() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
}

// The grant handle: a compaction reports its progress and its end.
func (s *openingScheduler) Started()                                          {}
func (s *openingScheduler) MeasureCPU(pebble.CompactionGoroutineKind)         {}
func (s *openingScheduler) CumulativeStats(pebble.CompactionGrantHandleStats) {}
func (s *openingScheduler) Done() {
	s.release()
	s.wake()
}
