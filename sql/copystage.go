package sql

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/streamdb/streamdb/storage"
)

// stager writes a COPY's batches to its stage on a goroutine of its own,
// so that encoding, compressing and writing the blocks of one batch runs
// beside the parsing of the next (on two cores, a COPY's wall time becomes
// about that of its parsing). Batches are handed over in order through a
// short queue, which bounds the memory in flight.
type stager struct {
	stage *storage.Stage
	in    chan arrow.RecordBatch
	done  chan struct{}
	mu    sync.Mutex
	err   error // the first failed Add; later batches are dropped
}

func newStager(st *storage.Stage) *stager {
	s := &stager{stage: st, in: make(chan arrow.RecordBatch, 4), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *stager) run() {
	defer close(s.done)
	for r := range s.in {
		if s.failed() == nil {
			if err := s.stage.Add(r); err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
		}
		r.Release()
	}
}

// add hands r (owned) to the stager; it reports an earlier batch's error.
func (s *stager) add(r arrow.RecordBatch) error {
	if err := s.failed(); err != nil {
		r.Release()
		return err
	}
	s.in <- r
	return nil
}

// finish waits until every batch handed over is staged.
func (s *stager) finish() error {
	close(s.in)
	<-s.done
	return s.failed()
}

func (s *stager) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
