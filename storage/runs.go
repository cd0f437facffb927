package storage

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Run is a sequence of writes, made in ascending key order (equal keys in
// the order they are meant to apply), that one operator adds to an epoch
// Batch with AddRun. Out-of-order writes are still correct, only slower to
// commit.
type Run struct {
	b           *pebble.Batch
	first, last []byte // copies
	key         []byte // scratch for the key being written
	ordered     bool
}

// NewRun returns an empty run for this batch.
func (b *Batch) NewRun() *Run { return &Run{b: b.db.pdb.NewBatch(), ordered: true} }

// NewRunSized returns an empty run with room for about size bytes of
// writes, so a run of known size is not grown (and copied) step by step.
func (b *Batch) NewRunSized(size int) *Run {
	return &Run{b: b.db.pdb.NewBatchWithSize(size), ordered: true}
}

// Len is the size of the run's encoded writes in bytes.
func (r *Run) Len() int { return r.b.Len() }

// AddRun adds r's writes to the batch; r must not be used afterwards.
func (b *Batch) AddRun(r *Run) {
	if r.b.Empty() {
		return
	}
	b.mu.Lock()
	b.runs = append(b.runs, r)
	b.mu.Unlock()
}

// note tracks the run's first key and whether keys ascend; k is r.key.
func (r *Run) note(k []byte) {
	if r.first == nil {
		r.first = bytes.Clone(k)
	} else if bytes.Compare(k, r.last) < 0 {
		r.ordered = false
	}
	r.last = append(r.last[:0], k...)
}

// PutState records an operator's state for key.
func (r *Run) PutState(job uint64, op uint32, key, val []byte) {
	r.key = appendStateKey(r.key[:0], job, op, key)
	r.note(r.key)
	r.b.Set(r.key, val, nil)
}

// DeleteState removes an operator's state for key.
func (r *Run) DeleteState(job uint64, op uint32, key []byte) {
	r.key = appendStateKey(r.key[:0], job, op, key)
	r.note(r.key)
	r.b.Delete(r.key, nil)
}

// PutViewRow stores a view row under its key.
func (r *Run) PutViewRow(view uint64, key, row []byte) {
	r.key = appendViewKey(r.key[:0], view, key)
	r.note(r.key)
	r.b.Set(r.key, row, nil)
}

// DeleteViewRow removes a view row.
func (r *Run) DeleteViewRow(view uint64, key []byte) {
	r.key = appendViewKey(r.key[:0], view, key)
	r.note(r.key)
	r.b.Delete(r.key, nil)
}

// layout assembles an epoch's writes in key order: runs, and single writes
// as one-write segments, sorted by first key. Segments of different
// operators cover disjoint key ranges, so sorting them orders every write;
// if some do not (or a run was written out of order), the result is still
// correct, and Pebble sorts it.
type layout struct {
	segs []segment
}

type segment struct {
	first []byte
	run   *pebble.Batch // nil: the single write below
	kind  pebble.InternalKeyKind
	value []byte
}

func (l *layout) addRun(r *Run) {
	if r.b.Empty() {
		return
	}
	if !r.ordered {
		l.segs = append(l.segs, segment{run: r.b}) // unordered: sorts first, overlaps anything
		return
	}
	l.segs = append(l.segs, segment{first: r.first, run: r.b})
}

func (l *layout) addSet(k, v []byte) {
	l.segs = append(l.segs, segment{first: k, kind: pebble.InternalKeyKindSet, value: v})
}

// addBatch splits a batch of single writes into one-write segments.
func (l *layout) addBatch(b *pebble.Batch) error {
	r := b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch kind {
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete:
			l.segs = append(l.segs, segment{first: k, kind: kind, value: v})
		default:
			return fmt.Errorf("epoch batch: unexpected write kind %v", kind)
		}
	}
}

// build returns one batch holding every segment, in order of first key
// (stable, so writes to one key keep their order).
func (l *layout) build(pdb *pebble.DB) (*pebble.Batch, error) {
	slices.SortStableFunc(l.segs, func(a, b segment) int { return bytes.Compare(a.first, b.first) })
	size := 0
	for _, s := range l.segs {
		if s.run != nil {
			size += s.run.Len()
		} else {
			size += len(s.first) + len(s.value) + 16
		}
	}
	all := pdb.NewBatchWithSize(size)
	for _, s := range l.segs {
		var err error
		switch {
		case s.run != nil:
			err = all.Apply(s.run, nil)
		case s.kind == pebble.InternalKeyKindSet:
			err = all.Set(s.first, s.value, nil)
		default:
			err = all.Delete(s.first, nil)
		}
		if err != nil {
			return nil, err
		}
	}
	return all, nil
}
