package storage

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// tailCache keeps the Arrow records a COPY staged, for the jobs reading
// the stream's tail. A job reads a COPY right after it is published, and
// loading its blocks back from Pebble (a read and a Snappy decompression
// into a fresh cache buffer, a copy, an IPC decode) was most of the time
// from the COPY's end until the job had its rows. From the cache a job gets
// the very records the COPY built, shared by reference (records are never
// written to once built).
//
// Only streams with registered readers (running jobs, TailReader) are
// cached. A published block is kept until each reader of its partition has
// read it whole, or until newer blocks push it out of the cache's budget,
// oldest first. A block that is not there is read from Pebble as before, so
// the cache changes no result: it holds exactly the rows the staged block
// holds, under the same key.
type tailCache struct {
	mu      sync.Mutex
	limit   int64
	size    int64
	blocks  map[tailKey]*tailBlock
	order   []tailKey // insertion order, oldest first; may name removed blocks
	readers map[LogPart]int
	tables  map[uint64]int // readers per table, over its partitions
	hits    int64          // blocks served
	misses  int64          // staged blocks jobs and queries loaded from Pebble instead
}

type tailKey struct{ table, stage, row uint64 }

type tailBlock struct {
	rec   arrow.RecordBatch
	bytes int64
	// pending is the reads still expected: -1 until the COPY is published.
	pending int
}

func newTailCache(limit int64) *tailCache {
	return &tailCache{limit: limit, blocks: map[tailKey]*tailBlock{},
		readers: map[LogPart]int{}, tables: map[uint64]int{}}
}

// TailReader registers a reader of partition part of stream table's tail
// (one per job source partition) until the returned function is called.
func (lg Log) TailReader(table uint64, part uint32) (release func()) {
	c := lg.db.tail
	if c.limit <= 0 {
		return func() {}
	}
	c.mu.Lock()
	c.readers[LogPart{Table: table, Part: part}]++
	c.tables[table]++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			lp := LogPart{Table: table, Part: part}
			if c.readers[lp]--; c.readers[lp] <= 0 {
				delete(c.readers, lp)
			}
			if c.tables[table]--; c.tables[table] <= 0 {
				delete(c.tables, table)
				c.dropTable(table)
			}
		})
	}
}

// TailStats reports the tail cache: the staged blocks read from it (hits)
// and from Pebble (misses), and the bytes it holds now.
type TailStats struct{ Hits, Misses, Bytes int64 }

// TailStats returns the tail cache's counters.
func (lg Log) TailStats() TailStats {
	c := lg.db.tail
	c.mu.Lock()
	defer c.mu.Unlock()
	return TailStats{Hits: c.hits, Misses: c.misses, Bytes: c.size}
}

// TailHits is the number of blocks read from the cache.
func (lg Log) TailHits() int64 { return lg.TailStats().Hits }

// miss counts a staged block loaded from Pebble.
func (c *tailCache) miss() {
	c.mu.Lock()
	c.misses++
	c.mu.Unlock()
}

// put keeps rec, staged as rows [row, row+rec.NumRows()) of stage id of
// table, if the table has readers and the block fits the budget.
func (c *tailCache) put(table, stage, row uint64, rec arrow.RecordBatch) {
	if c.limit <= 0 {
		return
	}
	n := recBytes(rec)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tables[table] == 0 || n > c.limit {
		return
	}
	for c.size+n > c.limit && c.evictOldest() {
	}
	rec.Retain()
	k := tailKey{table, stage, row}
	c.blocks[k] = &tailBlock{rec: rec, bytes: n, pending: -1}
	c.order = append(c.order, k)
	c.size += n
}

// publish marks the blocks of a stage (rows per block in order) as
// published to partition part: each reader of it will read them once.
func (c *tailCache) publish(table, stage uint64, part uint32, blocks []uint32) {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	readers := c.readers[LogPart{Table: table, Part: part}]
	row := uint64(0)
	for _, n := range blocks {
		k := tailKey{table, stage, row}
		row += uint64(n)
		if b, ok := c.blocks[k]; ok {
			if readers == 0 {
				c.remove(k, b)
			} else {
				b.pending = readers
			}
		}
	}
}

// drop removes the blocks of a stage that was not published.
func (c *tailCache) drop(table, stage uint64, blocks []uint32) {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	row := uint64(0)
	for _, n := range blocks {
		k := tailKey{table, stage, row}
		row += uint64(n)
		if b, ok := c.blocks[k]; ok {
			c.remove(k, b)
		}
	}
}

// get returns the published block of stage that starts at staged row row,
// retained, or nil. A read that reaches the block's end (row + its rows <=
// upTo) is one of the reads its readers owe.
func (c *tailCache) get(table, stage, row, upTo uint64) arrow.RecordBatch {
	if c.limit <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := tailKey{table, stage, row}
	b, ok := c.blocks[k]
	if !ok || b.pending < 0 {
		return nil
	}
	c.hits++
	rec := b.rec
	rec.Retain()
	if row+uint64(rec.NumRows()) <= upTo {
		if b.pending--; b.pending <= 0 {
			c.remove(k, b)
		}
	}
	return rec
}

// evictOldest removes the oldest block still cached; false if none is.
func (c *tailCache) evictOldest() bool {
	for len(c.order) > 0 {
		k := c.order[0]
		c.order = c.order[1:]
		if b, ok := c.blocks[k]; ok {
			c.remove(k, b)
			return true
		}
	}
	return false
}

func (c *tailCache) remove(k tailKey, b *tailBlock) {
	delete(c.blocks, k)
	c.size -= b.bytes
	b.rec.Release()
	if len(c.blocks) == 0 {
		c.order = c.order[:0]
	} else if len(c.order) > 4*len(c.blocks)+64 {
		live := c.order[:0]
		for _, o := range c.order {
			if _, ok := c.blocks[o]; ok {
				live = append(live, o)
			}
		}
		c.order = live
	}
}

func (c *tailCache) dropTable(table uint64) {
	for k, b := range c.blocks {
		if k.table == table {
			c.remove(k, b)
		}
	}
}

// recBytes is the memory rec's buffers hold (their capacity: a builder's
// buffers can be larger than the values in them).
func recBytes(rec arrow.RecordBatch) int64 {
	var n int64
	eachBuffer(rec, func(b *memory.Buffer) { n += int64(b.Cap()) })
	return n
}
