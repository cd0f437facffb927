package storage

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"
	"github.com/streamdb/streamdb/sqlerr"
)

// StateCursor reads an operator's state entries through one Pebble
// iterator kept open between reads, so an operator reading back many
// evicted groups in an epoch (a join's keys, one per row of a batch) pays
// for one iterator, not one per group: a fresh iterator's first seek
// opens every level and L0 sublevel again. The iterator is made at the
// first read and sees the database as it was then: the caller closes the
// cursor at every barrier, before it evicts what it has just committed,
// and the next read opens a new one. A memory-backend job's cursor reads
// its map as State.Get and State.ScanPrefix do.
type StateCursor struct {
	db   *DB
	job  uint64
	op   uint32
	base int // length of the operator's key prefix
	it   *pebble.Iterator
	key  []byte // scratch: the full key of a read
}

// Cursor returns a cursor over operator op of job's state entries.
func (st State) Cursor(job uint64, op uint32) *StateCursor {
	return &StateCursor{db: st.db, job: job, op: op, base: len(stateKey(job, op, nil))}
}

func (c *StateCursor) iter() (*pebble.Iterator, error) {
	if c.it != nil {
		return c.it, nil
	}
	lo := stateKey(c.job, c.op, nil)
	it, err := c.db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	c.it = it
	return it, nil
}

// ScanPrefix calls fn with the entries whose keys (without the operator's
// prefix) start with prefix, in key order; key and val are valid during
// the call only.
func (c *StateCursor) ScanPrefix(prefix []byte, fn func(key, val []byte) error) error {
	if m := c.db.Memory().of(c.job); m != nil {
		return m.scan(c.op, prefix, fn)
	}
	it, err := c.iter()
	if err != nil {
		return err
	}
	c.key = appendStateKey(c.key[:0], c.job, c.op, prefix)
	for ok := it.SeekGE(c.key); ok && bytes.HasPrefix(it.Key(), c.key); ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return sqlerr.Wrap(sqlerr.IOError, err)
		}
		if err := fn(it.Key()[c.base:], v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}

// Get returns the value of key (without the operator's prefix), nil if it
// has none; the value is valid until the next read or Close.
func (c *StateCursor) Get(key []byte) ([]byte, error) {
	if m := c.db.Memory().of(c.job); m != nil {
		return m.get(c.op, key), nil
	}
	it, err := c.iter()
	if err != nil {
		return nil, err
	}
	c.key = appendStateKey(c.key[:0], c.job, c.op, key)
	if !it.SeekGE(c.key) || !bytes.Equal(it.Key(), c.key) {
		if err := it.Error(); err != nil {
			return nil, sqlerr.Wrap(sqlerr.IOError, err)
		}
		return nil, nil
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, sqlerr.Wrap(sqlerr.IOError, err)
	}
	return v, nil
}

// Close lets the iterator go (the cursor may be read again: it opens a
// new one).
func (c *StateCursor) Close() error {
	if c.it == nil {
		return nil
	}
	err := c.it.Close()
	c.it = nil
	if err != nil {
		return sqlerr.Wrap(sqlerr.IOError, err)
	}
	return nil
}
