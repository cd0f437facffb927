// Package datagen is the datagen source connector (connector =
// 'datagen'): random or sequence values for the declared columns, as
// Flink's datagen.
package datagen

import (
	"github.com/streamdb/streamdb/connector"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// datagen follows Flink's datagen connector: each column is a random or a
// sequence field, the source is bounded by number_of_rows or by its
// sequences' ends, and it emits rows_per_second rows a second (0: as fast
// as it can). Options (Flink's, with '_' or '-'):
//
//	rows_per_second          default 10000
//	number_of_rows           default unbounded
//	datagen.split            splits, default 1 (row r is in split r mod k)
//	datagen.seed             default 0
//	fields.<col>.kind        random (default) or sequence
//	fields.<col>.min, .max   random numbers: the range (default: the
//	                         type's range for integers, [0, 1) for floats)
//	fields.<col>.length      random text: its length (default 100)
//	fields.<col>.start, .end sequence: first and last value (both required)
//	fields.<col>.null_rate   fraction of NULLs (default 0)
//	fields.<col>.max_past    random timestamp: up to this many ms before
//	                         the row's time (default 0)
//
// Row r's values depend only on (seed, r), so a split resumes anywhere. A
// timestamp column holds the row's time, 2026-01-01 00:00:00 + r / rate
// (1 ms apart without a rate), where Flink's is the wall clock: the rows
// are then reproducible, which exactly-once replay needs.
type datagen struct {
	cols   []dgField
	ts     []types.T
	rows   int64 // 0: unbounded
	rate   float64
	splits int
	seed   uint64
	stepUS int64 // row time step
	schema *arrow.Schema
	// made[i] says column i is made (Project; all by default); last is
	// the last column made, after which no draw is made.
	made []bool
	last int
}

type dgField struct {
	t          types.T
	sequence   bool
	start, end int64
	imin, imax int64
	fmin, fmax float64
	length     int
	nullRate   float64
	maxPastUS  int64
}

func init() { connector.Register("datagen", newDatagen) }

func newDatagen(cols []connector.Column, o *connector.Options) (connector.Connector, error) {
	c := &datagen{}
	rate, err := o.Int("rows_per_second", 10000, 0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	c.rate = float64(rate)
	c.stepUS = 1000
	if rate > 0 {
		c.stepUS = max(1, 1_000_000/rate)
	}
	if c.rows, err = o.Int("number_of_rows", 0, 1, math.MaxInt64); err != nil {
		return nil, err
	}
	split, err := o.Int("datagen.split", 1, 1, 256)
	if err != nil {
		return nil, err
	}
	c.splits = int(split)
	seed, err := o.Int("datagen.seed", 0, 0, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	c.seed = uint64(seed)
	for _, col := range cols {
		f, err := datagenField(col, o)
		if err != nil {
			return nil, err
		}
		if f.sequence {
			n := f.end - f.start + 1
			if c.rows == 0 || n < c.rows {
				c.rows = n
			}
		}
		c.cols = append(c.cols, f)
		c.ts = append(c.ts, col.Type)
	}
	c.schema = connector.SchemaOf(c.ts)
	return c.project(nil), nil
}

// Project makes only the columns read; the others are NULL
// (connector.Projector). An unread column before a read one still makes
// its draws, so the read one keeps its values.
func (c *datagen) Project(read []bool) connector.Connector { return c.project(read) }

func (c *datagen) project(read []bool) *datagen {
	p := *c
	p.made, p.last = make([]bool, len(c.cols)), -1
	for _, i := range connector.ReadCols(read, len(c.cols)) {
		p.made[i], p.last = true, i
	}
	return &p
}

func datagenField(col connector.Column, o *connector.Options) (dgField, error) {
	f := dgField{t: col.Type, length: 100}
	key := func(k string) string { return "fields." + connector.NormKey(col.Name) + "." + k }
	switch col.Type.Kind {
	case types.Bool, types.Int16, types.Int32, types.Int64, types.Float32, types.Float64, types.Text, types.Timestamp:
	default:
		return f, sqlerr.New(sqlerr.FeatureNotSupported, "datagen cannot generate column %q of type %s", col.Name, col.Type)
	}
	kind, _ := o.Take(key("kind"))
	switch kind {
	case "", "random":
	case "sequence":
		f.sequence = true
	default:
		return f, sqlerr.New(sqlerr.InvalidParameterValue, "option %q must be random or sequence, not %q", key("kind"), kind)
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch col.Type.Kind {
	case types.Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case types.Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	}
	var err error
	if f.sequence {
		switch col.Type.Kind {
		case types.Int16, types.Int32, types.Int64, types.Text:
		default:
			return f, sqlerr.New(sqlerr.InvalidParameterValue, "option %q: a sequence field must be an integer or text column, and %q is %s", key("kind"), col.Name, col.Type)
		}
		for _, k := range []string{"start", "end"} {
			if !o.Has(key(k)) {
				return f, sqlerr.New(sqlerr.InvalidParameterValue, "option %q is required for a sequence field", key(k))
			}
		}
		if f.start, err = o.Int(key("start"), 0, lo, hi); err != nil {
			return f, err
		}
		if f.end, err = o.Int(key("end"), 0, f.start, hi); err != nil {
			return f, err
		}
	} else {
		if col.Type.IsFloat() {
			f.fmin, f.fmax = 0, 1
			if v, ok, err := o.Float(key("min")); err != nil {
				return f, err
			} else if ok {
				f.fmin = v
			}
			if v, ok, err := o.Float(key("max")); err != nil {
				return f, err
			} else if ok {
				f.fmax = v
			}
			if f.fmax < f.fmin {
				return f, sqlerr.New(sqlerr.InvalidParameterValue, "option %q must not be below %q", key("max"), key("min"))
			}
		} else if col.Type.IsInteger() {
			if f.imin, err = o.Int(key("min"), lo, lo, hi); err != nil {
				return f, err
			}
			if f.imax, err = o.Int(key("max"), hi, f.imin, hi); err != nil {
				return f, err
			}
		}
		if col.Type.Kind == types.Text {
			l, err := o.Int(key("length"), 100, 1, 1<<20)
			if err != nil {
				return f, err
			}
			f.length = int(l)
		}
		if col.Type.Kind == types.Timestamp {
			ms, err := o.Int(key("max_past"), 0, 0, math.MaxInt64/1000)
			if err != nil {
				return f, err
			}
			f.maxPastUS = ms * 1000
		}
	}
	if v, ok, err := o.Float(key("null_rate")); err != nil {
		return f, err
	} else if ok {
		if v < 0 || v > 1 {
			return f, sqlerr.New(sqlerr.InvalidParameterValue, "option %q must be from 0 to 1", key("null_rate"))
		}
		f.nullRate = v
	}
	return f, nil
}

func (c *datagen) Splits() int   { return c.splits }
func (c *datagen) Bounded() bool { return c.rows > 0 }

// End is the count of the split's events (rows) below the bound.
func (c *datagen) End(split int) (connector.Position, bool) {
	if c.rows == 0 || c.rate > 0 {
		return 0, false
	}
	return connector.Position((c.rows - int64(split) + int64(c.splits) - 1) / int64(c.splits)), true
}

func (c *datagen) Open(split int, pos connector.Position, paced bool) (connector.Reader, error) {
	if split < 0 || split >= c.splits {
		return nil, sqlerr.New(sqlerr.Internal, "datagen: split %d of %d", split, c.splits)
	}
	pcg := rand.NewPCG(c.seed, 0)
	return &datagenReader{c: c, split: int64(split), pos: int64(pos), pcg: pcg, rng: rand.New(pcg),
		thr: connector.NewThrottle(c.rate/float64(c.splits), paced)}, nil
}

type datagenReader struct {
	c     *datagen
	split int64
	pos   int64
	pcg   *rand.PCG
	rng   *rand.Rand
	thr   *connector.Throttle
	bls   []array.Builder
	buf   []byte
}

func (r *datagenReader) Position() connector.Position { return connector.Position(r.pos) }
func (r *datagenReader) Close() error {
	for _, b := range r.bls {
		if b != nil {
			b.Release()
		}
	}
	r.bls = nil
	return nil
}

func (r *datagenReader) row(p int64) int64 { return r.split + p*int64(r.c.splits) }

func (r *datagenReader) Read(mem memory.Allocator, maxRows int) (arrow.RecordBatch, error) {
	if r.c.rows > 0 && r.row(r.pos) >= r.c.rows {
		return nil, connector.EOF
	}
	n := r.thr.Allow(maxRows)
	if r.c.rows > 0 {
		left := (r.c.rows - r.row(r.pos) + int64(r.c.splits) - 1) / int64(r.c.splits)
		n = int(min(int64(n), left))
	}
	if n == 0 {
		return nil, nil
	}
	if r.bls == nil {
		for c, t := range r.c.ts {
			var b array.Builder // nil: not made
			if r.c.made[c] {
				b = types.NewBuilder(mem, t)
			}
			r.bls = append(r.bls, b)
		}
	}
	for i := 0; i < n; i++ {
		row := r.row(r.pos + int64(i))
		r.pcg.Seed(r.c.seed, uint64(row))
		for c := 0; c <= r.c.last; c++ {
			r.value(&r.c.cols[c], r.bls[c], row)
		}
	}
	r.pos += int64(n)
	r.thr.Took(n)
	cols := make([]arrow.Array, len(r.bls))
	for i, b := range r.bls {
		if b == nil {
			cols[i] = connector.NullColumn(mem, r.c.ts[i], n)
		} else {
			cols[i] = b.NewArray()
		}
	}
	return connector.NewBatch(r.c.schema, cols, n), nil
}

// value appends column f's value of row to b, drawing from r.rng (seeded
// for the row; every column draws in order, so values are reproducible).
// A column not made (b nil) makes its draws only.
func (r *datagenReader) value(f *dgField, b array.Builder, row int64) {
	if f.nullRate > 0 && r.rng.Float64() < f.nullRate {
		if b != nil {
			b.AppendNull()
		}
		return
	}
	if b == nil {
		r.draw(f)
		return
	}
	if f.sequence {
		v := f.start + row
		if f.t.Kind == types.Text {
			r.buf = strconv.AppendInt(r.buf[:0], v, 10)
			connector.AppendBytes(b, r.buf)
		} else {
			connector.AppendInt(b, v)
		}
		return
	}
	switch f.t.Kind {
	case types.Bool:
		b.(*array.BooleanBuilder).Append(r.rng.IntN(2) == 1)
	case types.Int16, types.Int32, types.Int64:
		span := uint64(f.imax - f.imin)
		var v int64
		if span == math.MaxUint64 {
			v = int64(r.rng.Uint64())
		} else {
			v = f.imin + int64(r.rng.Uint64N(span+1))
		}
		connector.AppendInt(b, v)
	case types.Float32, types.Float64:
		b.(*array.Float64Builder).Append(f.fmin + r.rng.Float64()*(f.fmax-f.fmin))
	case types.Text:
		r.buf = r.buf[:0]
		for i := 0; i < f.length; i++ {
			r.buf = append(r.buf, "0123456789abcdef"[r.rng.IntN(16)])
		}
		connector.AppendBytes(b, r.buf)
	case types.Timestamp:
		t := connector.BaseTime.UnixMicro() + row*r.c.stepUS
		if f.maxPastUS > 0 {
			t -= r.rng.Int64N(f.maxPastUS + 1)
		}
		connector.AppendInt(b, t)
	}
}

// draw makes the draws of a non-NULL value of column f, as value does.
func (r *datagenReader) draw(f *dgField) {
	if f.sequence {
		return
	}
	switch f.t.Kind {
	case types.Bool:
		r.rng.IntN(2)
	case types.Int16, types.Int32, types.Int64:
		if span := uint64(f.imax - f.imin); span == math.MaxUint64 {
			r.rng.Uint64()
		} else {
			r.rng.Uint64N(span + 1)
		}
	case types.Float32, types.Float64:
		r.rng.Float64()
	case types.Text:
		for i := 0; i < f.length; i++ {
			r.rng.IntN(16)
		}
	case types.Timestamp:
		if f.maxPastUS > 0 {
			r.rng.Int64N(f.maxPastUS + 1)
		}
	}
}

var _ connector.Projector = (*datagen)(nil)
