// Package nexmark is the Nexmark benchmark's event generator as a source
// connector (connector = 'nexmark'): the person, auction and bid tables of
// one deterministic event stream (nexmark_gen.go). The queries' texts are
// in the top-level nexmark package.
package nexmark

import (
	"github.com/streamdb/streamdb/connector"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Columns are the columns of each Nexmark table, RisingWave's
// schema (snake_case), in EventKind order.
var Columns = [][]connector.Column{
	{{Name: "id", Type: types.TInt64}, {Name: "name", Type: types.TText}, {Name: "email_address", Type: types.TText}, {Name: "credit_card", Type: types.TText},
		{Name: "city", Type: types.TText}, {Name: "state", Type: types.TText}, {Name: "date_time", Type: types.TTimestamp}, {Name: "extra", Type: types.TText}},
	{{Name: "id", Type: types.TInt64}, {Name: "item_name", Type: types.TText}, {Name: "description", Type: types.TText}, {Name: "initial_bid", Type: types.TInt64},
		{Name: "reserve", Type: types.TInt64}, {Name: "date_time", Type: types.TTimestamp}, {Name: "expires", Type: types.TTimestamp},
		{Name: "seller", Type: types.TInt64}, {Name: "category", Type: types.TInt64}, {Name: "extra", Type: types.TText}},
	{{Name: "auction", Type: types.TInt64}, {Name: "bidder", Type: types.TInt64}, {Name: "price", Type: types.TInt64}, {Name: "channel", Type: types.TText},
		{Name: "url", Type: types.TText}, {Name: "date_time", Type: types.TTimestamp}, {Name: "extra", Type: types.TText}},
}

// nexmark is the connector of one Nexmark table. Split i of k holds the
// events numbered i, i+k, i+2k, ... (below nexmark.events if bounded);
// its position is how many of them were passed, whatever their table.
type nexmark struct {
	kind   EventKind
	fields []int // the Columns index of each declared column
	ts     []types.T
	events int64 // 0: unbounded
	rate   float64
	splits int
	seed   uint64
	schema *arrow.Schema
	// read are the declared columns made (Project; all by default), need
	// their Columns indexes.
	read []int
	need Cols
}

func init() { connector.Register("nexmark", newNexmark) }

func newNexmark(cols []connector.Column, o *connector.Options) (connector.Connector, error) {
	c := &nexmark{}
	t, ok := o.Take("nexmark.table")
	if !ok {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"nexmark.table\" is required (person, auction or bid)")
	}
	found := false
	for k, name := range Tables {
		if strings.EqualFold(t, name) {
			c.kind, found = EventKind(k), true
		}
	}
	if !found {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"nexmark.table\" must be person, auction or bid, not %q", t)
	}
	var err error
	if c.events, err = o.Int("nexmark.events", 0, 0, math.MaxInt64); err != nil {
		return nil, err
	}
	rate, err := o.Int("nexmark.rate", 0, 0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	c.rate = float64(rate)
	split, err := o.Int("nexmark.split", 1, 1, 256)
	if err != nil {
		return nil, err
	}
	c.splits = int(split)
	seed, err := o.Int("nexmark.seed", 0, 0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	c.seed = uint64(seed)
	schema := Columns[c.kind]
	for _, col := range cols {
		idx := -1
		for i, s := range schema {
			if s.Name == col.Name {
				idx = i
			}
		}
		if idx < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "nexmark table %s has no column %q", Tables[c.kind], col.Name)
		}
		if !connector.SameKind(col.Type, schema[idx].Type.Kind) {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "column %q of nexmark table %s is %s, not %s",
				col.Name, Tables[c.kind], schema[idx].Type, col.Type)
		}
		c.fields = append(c.fields, idx)
		c.ts = append(c.ts, col.Type)
	}
	c.schema = connector.SchemaOf(c.ts)
	return c.project(nil), nil
}

// Project makes only the columns read; the others are NULL
// (connector.Projector).
func (c *nexmark) Project(read []bool) connector.Connector { return c.project(read) }

func (c *nexmark) project(read []bool) *nexmark {
	p := *c
	p.read = connector.ReadCols(read, len(c.fields))
	p.need = 0
	for _, i := range p.read {
		p.need |= 1 << c.fields[i]
	}
	return &p
}

func (c *nexmark) Splits() int   { return c.splits }
func (c *nexmark) Bounded() bool { return c.events > 0 }

// End is the count of the split's events (rows) below the bound.
func (c *nexmark) End(split int) (connector.Position, bool) {
	if c.events == 0 || c.rate > 0 {
		return 0, false
	}
	return connector.Position((c.events - int64(split) + int64(c.splits) - 1) / int64(c.splits)), true
}

func (c *nexmark) Open(split int, pos connector.Position, paced bool) (connector.Reader, error) {
	if split < 0 || split >= c.splits {
		return nil, sqlerr.New(sqlerr.Internal, "nexmark: split %d of %d", split, c.splits)
	}
	return &nexmarkReader{c: c, split: int64(split), pos: int64(pos), gen: NewGenerator(c.seed),
		thr: connector.NewThrottle(c.rate/float64(c.splits), paced)}, nil
}

type nexmarkReader struct {
	c     *nexmark
	split int64
	pos   int64 // events of this split passed
	gen   *Generator
	thr   *connector.Throttle
	ev    Event
	buf   []byte
	bls   []array.Builder
}

func (r *nexmarkReader) Position() connector.Position { return connector.Position(r.pos) }
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
		return nil, connector.EOF
	}
	n := r.thr.Allow(maxRows)
	if r.c.events > 0 {
		left := (r.c.events - r.event(r.pos) + int64(r.c.splits) - 1) / int64(r.c.splits)
		n = int(min(int64(n), left))
	}
	if n == 0 {
		return nil, nil
	}
	if r.bls == nil {
		for _, c := range r.c.read {
			r.bls = append(r.bls, types.NewBuilder(mem, r.c.ts[c]))
		}
	}
	rows := 0
	for i := 0; i < n; i++ {
		ev := r.event(r.pos + int64(i))
		if KindOf(ev) != r.c.kind {
			continue
		}
		r.buf = r.gen.EventCols(ev, &r.ev, r.buf[:0], r.c.need)
		r.appendRow()
		rows++
	}
	r.pos += int64(n)
	r.thr.Took(n)
	cols := make([]arrow.Array, len(r.c.ts))
	for i, c := range r.c.read {
		cols[c] = r.bls[i].NewArray()
	}
	for c, t := range r.c.ts {
		if cols[c] == nil {
			cols[c] = connector.NullColumn(mem, t, rows)
		}
	}
	return connector.NewBatch(r.c.schema, cols, rows), nil
}

// appendRow appends r.ev's columns read.
func (r *nexmarkReader) appendRow() {
	ev := &r.ev
	for i, c := range r.c.read {
		f, b := r.c.fields[c], r.bls[i]
		switch r.c.kind {
		case KindPerson:
			switch f {
			case 0:
				connector.AppendInt(b, ev.ID)
			case 1:
				connector.AppendBytes(b, ev.Name)
			case 2:
				connector.AppendBytes(b, ev.Email)
			case 3:
				connector.AppendBytes(b, ev.CreditCard)
			case 4:
				connector.AppendBytes(b, ev.City)
			case 5:
				connector.AppendBytes(b, ev.State)
			case 6:
				connector.AppendInt(b, ev.DateTime)
			case 7:
				connector.AppendBytes(b, ev.Extra)
			}
		case KindAuction:
			switch f {
			case 0:
				connector.AppendInt(b, ev.ID)
			case 1:
				connector.AppendBytes(b, ev.ItemName)
			case 2:
				connector.AppendBytes(b, ev.Description)
			case 3:
				connector.AppendInt(b, ev.InitialBid)
			case 4:
				connector.AppendInt(b, ev.Reserve)
			case 5:
				connector.AppendInt(b, ev.DateTime)
			case 6:
				connector.AppendInt(b, ev.Expires)
			case 7:
				connector.AppendInt(b, ev.Seller)
			case 8:
				connector.AppendInt(b, ev.Category)
			case 9:
				connector.AppendBytes(b, ev.Extra)
			}
		default:
			switch f {
			case 0:
				connector.AppendInt(b, ev.Auction)
			case 1:
				connector.AppendInt(b, ev.Bidder)
			case 2:
				connector.AppendInt(b, ev.Price)
			case 3:
				connector.AppendBytes(b, ev.Channel)
			case 4:
				connector.AppendBytes(b, ev.URL)
			case 5:
				connector.AppendInt(b, ev.DateTime)
			case 6:
				connector.AppendBytes(b, ev.Extra)
			}
		}
	}
}

var _ connector.Projector = (*nexmark)(nil)
