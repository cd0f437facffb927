package source

import (
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// NexmarkColumns are the columns of each Nexmark table, RisingWave's
// schema (snake_case), in EventKind order.
var NexmarkColumns = [][]Column{
	{{"id", types.TInt64}, {"name", types.TText}, {"email_address", types.TText}, {"credit_card", types.TText},
		{"city", types.TText}, {"state", types.TText}, {"date_time", types.TTimestamp}, {"extra", types.TText}},
	{{"id", types.TInt64}, {"item_name", types.TText}, {"description", types.TText}, {"initial_bid", types.TInt64},
		{"reserve", types.TInt64}, {"date_time", types.TTimestamp}, {"expires", types.TTimestamp},
		{"seller", types.TInt64}, {"category", types.TInt64}, {"extra", types.TText}},
	{{"auction", types.TInt64}, {"bidder", types.TInt64}, {"price", types.TInt64}, {"channel", types.TText},
		{"url", types.TText}, {"date_time", types.TTimestamp}, {"extra", types.TText}},
}

// nexmark is the connector of one Nexmark table. Split i of k holds the
// events numbered i, i+k, i+2k, ... (below nexmark.events if bounded);
// its position is how many of them were passed, whatever their table.
type nexmark struct {
	kind   EventKind
	fields []int // the NexmarkColumns index of each declared column
	ts     []types.T
	events int64 // 0: unbounded
	rate   float64
	splits int
	seed   uint64
	schema *arrow.Schema
}

func newNexmark(cols []Column, o *options) (Connector, error) {
	c := &nexmark{}
	t, ok := o.take("nexmark.table")
	if !ok {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"nexmark.table\" is required (person, auction or bid)")
	}
	found := false
	for k, name := range NexmarkTables {
		if strings.EqualFold(t, name) {
			c.kind, found = EventKind(k), true
		}
	}
	if !found {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"nexmark.table\" must be person, auction or bid, not %q", t)
	}
	var err error
	if c.events, err = o.int("nexmark.events", 0, 0, math.MaxInt64); err != nil {
		return nil, err
	}
	rate, err := o.int("nexmark.rate", 0, 0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	c.rate = float64(rate)
	split, err := o.int("nexmark.split", 1, 1, 256)
	if err != nil {
		return nil, err
	}
	c.splits = int(split)
	seed, err := o.int("nexmark.seed", 0, 0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	c.seed = uint64(seed)
	schema := NexmarkColumns[c.kind]
	for _, col := range cols {
		idx := -1
		for i, s := range schema {
			if s.Name == col.Name {
				idx = i
			}
		}
		if idx < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "nexmark table %s has no column %q", NexmarkTables[c.kind], col.Name)
		}
		if !sameKind(col.Type, schema[idx].Type.Kind) {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "column %q of nexmark table %s is %s, not %s",
				col.Name, NexmarkTables[c.kind], schema[idx].Type, col.Type)
		}
		c.fields = append(c.fields, idx)
		c.ts = append(c.ts, col.Type)
	}
	c.schema = schemaOf(c.ts)
	return c, nil
}

func (c *nexmark) Splits() int   { return c.splits }
func (c *nexmark) Bounded() bool { return c.events > 0 }

// End is the count of the split's events (rows) below the bound.
func (c *nexmark) End(split int) (Position, bool) {
	if c.events == 0 || c.rate > 0 {
		return 0, false
	}
	return Position((c.events - int64(split) + int64(c.splits) - 1) / int64(c.splits)), true
}

func (c *nexmark) Open(split int, pos Position, paced bool) (Reader, error) {
	if split < 0 || split >= c.splits {
		return nil, sqlerr.New(sqlerr.Internal, "nexmark: split %d of %d", split, c.splits)
	}
	return &nexmarkReader{c: c, split: int64(split), pos: int64(pos), gen: NewGenerator(c.seed),
		thr: newThrottle(c.rate/float64(c.splits), paced)}, nil
}

type nexmarkReader struct {
	c     *nexmark
	split int64
	pos   int64 // events of this split passed
	gen   *Generator
	thr   *throttle
	ev    Event
	buf   []byte
	bls   []array.Builder
}

func (r *nexmarkReader) Position() Position { return Position(r.pos) }
func (r *nexmarkReader) Close() error {
	for _, b := range r.bls {
		b.Release()
	}
	r.bls = nil
	return nil
}

// event is the number of the split's event at position p.
func (r *nexmarkReader) event(p int64) int64 { return r.split + p*int64(r.c.splits) }

// Read passes up to max events of the split (the rate limit counts
// events, as the reference's rate does) and returns the rows of those of
// the source's table.
func (r *nexmarkReader) Read(mem memory.Allocator, maxRows int) (arrow.RecordBatch, error) {
	if r.c.events > 0 && r.event(r.pos) >= r.c.events {
		return nil, EOF
	}
	n := r.thr.allow(maxRows)
	if r.c.events > 0 {
		left := (r.c.events - r.event(r.pos) + int64(r.c.splits) - 1) / int64(r.c.splits)
		n = int(min(int64(n), left))
	}
	if n == 0 {
		return nil, nil
	}
	if r.bls == nil {
		for _, t := range r.c.ts {
			r.bls = append(r.bls, types.NewBuilder(mem, t))
		}
	}
	rows := 0
	for i := 0; i < n; i++ {
		ev := r.event(r.pos + int64(i))
		if KindOf(ev) != r.c.kind {
			continue
		}
		r.buf = r.gen.Event(ev, &r.ev, r.buf[:0])
		r.appendRow()
		rows++
	}
	r.pos += int64(n)
	r.thr.took(n)
	cols := make([]arrow.Array, len(r.bls))
	for i, b := range r.bls {
		cols[i] = b.NewArray()
	}
	return newBatch(r.c.schema, cols, rows), nil
}

// appendRow appends r.ev's declared columns.
func (r *nexmarkReader) appendRow() {
	ev := &r.ev
	for i, f := range r.c.fields {
		b := r.bls[i]
		switch r.c.kind {
		case KindPerson:
			switch f {
			case 0:
				appendInt(b, ev.ID)
			case 1:
				appendBytes(b, ev.Name)
			case 2:
				appendBytes(b, ev.Email)
			case 3:
				appendBytes(b, ev.CreditCard)
			case 4:
				appendBytes(b, ev.City)
			case 5:
				appendBytes(b, ev.State)
			case 6:
				appendInt(b, ev.DateTime)
			case 7:
				appendBytes(b, ev.Extra)
			}
		case KindAuction:
			switch f {
			case 0:
				appendInt(b, ev.ID)
			case 1:
				appendBytes(b, ev.ItemName)
			case 2:
				appendBytes(b, ev.Description)
			case 3:
				appendInt(b, ev.InitialBid)
			case 4:
				appendInt(b, ev.Reserve)
			case 5:
				appendInt(b, ev.DateTime)
			case 6:
				appendInt(b, ev.Expires)
			case 7:
				appendInt(b, ev.Seller)
			case 8:
				appendInt(b, ev.Category)
			case 9:
				appendBytes(b, ev.Extra)
			}
		default:
			switch f {
			case 0:
				appendInt(b, ev.Auction)
			case 1:
				appendInt(b, ev.Bidder)
			case 2:
				appendInt(b, ev.Price)
			case 3:
				appendBytes(b, ev.Channel)
			case 4:
				appendBytes(b, ev.URL)
			case 5:
				appendInt(b, ev.DateTime)
			case 6:
				appendBytes(b, ev.Extra)
			}
		}
	}
}

func appendInt(b array.Builder, v int64) { b.(*array.Int64Builder).Append(v) }

func appendBytes(b array.Builder, v []byte) { b.(*array.StringBuilder).BinaryBuilder.Append(v) }

// schemaOf is the schema of a source's batches: columns c0, c1, ... of
// types ts.
func schemaOf(ts []types.T) *arrow.Schema {
	names := make([]string, len(ts))
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	return types.Schema(names, ts)
}

// newBatch makes a record of cols (which it takes over).
func newBatch(schema *arrow.Schema, cols []arrow.Array, n int) arrow.RecordBatch {
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}
