package accum

import (
	"encoding/binary"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/opkit"
	"math"
	"math/big"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Accum is the state of one aggregate for every group. update folds a batch
// in with a typed loop; signs (nil: all +1) are -1 for retracted rows.
type Accum interface {
	Grow(n int)
	Update(gids []int32, arg arrow.Array, signs []int8) error
	Result(gid int32) types.Datum
	Encode(buf []byte, gid int32) []byte
	Decode(buf []byte, gid int32) ([]byte, error)
	// reset clears group gid for reuse by another group.
	Reset(gid int32)
}

// New makes the accumulator of s; retract says the input may retract rows.
func New(s Spec, retract bool) Accum {
	var argT types.T
	if s.Arg != nil {
		argT = s.Arg.Type()
	}
	var a Accum
	switch s.Kind {
	case CountStar, Count:
		a = &CountAcc{star: s.Kind == CountStar}
	case Sum, Avg:
		switch argT.Physical() {
		case types.PhysInt64:
			a = &sumIntAcc{avg: s.Kind == Avg, out: s.T}
		case types.PhysFloat64:
			a = &sumFloatAcc{avg: s.Kind == Avg}
		case types.PhysDecimal:
			a = &sumDecAcc{avg: s.Kind == Avg, in: argT, out: s.T}
		case types.PhysInterval:
			a = &sumIntervalAcc{avg: s.Kind == Avg}
		}
	case Min, Max:
		a = &minMaxAcc{max: s.Kind == Max, t: argT, retract: retract}
	case ArrayAgg:
		if s.Sorted {
			return newArrayAggBag(s, argT) // DISTINCT is its own
		} else {
			a = &arrayAggAcc{}
		}
	case PercentileCont, PercentileDisc, Mode:
		a = &orderedSetAcc{spec: s, t: argT}
	}
	if s.Distinct {
		a = &distinctAcc{inner: a, t: argT}
	}
	return a
}

func sign(signs []int8, i int) int64 {
	if signs == nil {
		return 1
	}
	return int64(signs[i])
}

// --- count ---

type CountAcc struct {
	star bool
	n    []int64
}

func (a *CountAcc) Grow(n int) {
	for len(a.n) < n {
		a.n = append(a.n, 0)
	}
}

func (a *CountAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	n := a.n
	if a.star || arg.NullN() == 0 {
		if signs == nil {
			for _, g := range gids {
				n[g]++
			}
		} else {
			for i, g := range gids {
				n[g] += int64(signs[i])
			}
		}
		return nil
	}
	for i, g := range gids {
		if arg.IsValid(i) {
			n[g] += sign(signs, i)
		}
	}
	return nil
}

// NewCountStar returns a count(*) accumulator (an aggregate keeps one to
// know when a group empties under retraction).
func NewCountStar() *CountAcc { return &CountAcc{star: true} }

// N is group gid's count.
func (a *CountAcc) N(gid int32) int64 { return a.n[gid] }

func (a *CountAcc) Result(gid int32) types.Datum { return types.Int(a.n[gid]) }
func (a *CountAcc) Reset(gid int32)              { a.n[gid] = 0 }
func (a *CountAcc) Encode(buf []byte, gid int32) []byte {
	return binary.AppendVarint(buf, a.n[gid])
}
func (a *CountAcc) Decode(buf []byte, gid int32) ([]byte, error) {
	v, k := binary.Varint(buf)
	if k <= 0 {
		return nil, opkit.ErrCorruptState
	}
	a.n[gid] = v
	return buf[k:], nil
}

// --- sum/avg over integers: a 128-bit sum so sum(bigint) cannot overflow ---

type sumIntAcc struct {
	avg bool
	out types.T
	hi  []int64
	lo  []uint64
	n   []int64
}

func (a *sumIntAcc) Grow(n int) {
	for len(a.n) < n {
		a.hi, a.lo, a.n = append(a.hi, 0), append(a.lo, 0), append(a.n, 0)
	}
}

func (a *sumIntAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	vs := arg.(*array.Int64).Int64Values()
	hi, lo, n := a.hi, a.lo, a.n
	noNulls := arg.NullN() == 0
	for i, g := range gids {
		if !noNulls && arg.IsNull(i) {
			continue
		}
		v := vs[i]
		s := sign(signs, i)
		if s < 0 {
			v = -v // -MinInt64 wraps; handled as adding the two's complement below
		}
		var c uint64
		lo[g], c = bits.Add64(lo[g], uint64(v), 0)
		hi[g] += (v >> 63) + int64(c)
		n[g] += s
	}
	return nil
}

func (a *sumIntAcc) Result(gid int32) types.Datum {
	if a.n[gid] == 0 {
		return types.Null
	}
	sum := decimal128.New(a.hi[gid], a.lo[gid])
	switch {
	case a.avg:
		return avgDatum(sum, 0, 0, a.n[gid], a.out)
	case a.out.Kind == types.Numeric && a.out.Scale == 0:
		return types.Datum{D: sum}
	case a.out.Kind == types.Numeric:
		return types.Datum{D: divDecimal(sum, 0, 1, a.out.Scale)}
	}
	return types.Int(int64(a.lo[gid])) // bigint result: range checked in checkResult
}

func (a *sumIntAcc) Reset(gid int32) { a.hi[gid], a.lo[gid], a.n[gid] = 0, 0, 0 }

func (a *sumIntAcc) CheckResult(gid int32) error {
	if a.avg || a.out.Kind == types.Numeric || a.n[gid] == 0 {
		return nil
	}
	lo := int64(a.lo[gid])
	if (a.hi[gid] == 0 && lo >= 0) || (a.hi[gid] == -1 && lo < 0) {
		return nil
	}
	return sqlerr.New(sqlerr.NumericOutOfRange, "bigint out of range")
}

func (a *sumIntAcc) Encode(buf []byte, gid int32) []byte {
	buf = binary.AppendVarint(buf, a.hi[gid])
	buf = binary.AppendUvarint(buf, a.lo[gid])
	return binary.AppendVarint(buf, a.n[gid])
}

func (a *sumIntAcc) Decode(buf []byte, gid int32) ([]byte, error) {
	var k int
	if a.hi[gid], k = binary.Varint(buf); k <= 0 {
		return nil, opkit.ErrCorruptState
	}
	buf = buf[k:]
	if a.lo[gid], k = binary.Uvarint(buf); k <= 0 {
		return nil, opkit.ErrCorruptState
	}
	buf = buf[k:]
	if a.n[gid], k = binary.Varint(buf); k <= 0 {
		return nil, opkit.ErrCorruptState
	}
	return buf[k:], nil
}

// divDecimal returns num/den (num at scale ns) at scale out, rounding half away from zero.
func divDecimal(num decimal128.Num, ns int32, den int64, out int32) decimal128.Num {
	n := num.BigInt()
	shift := int64(out - ns)
	d := big.NewInt(den)
	if shift >= 0 {
		n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(shift), nil))
	} else {
		d.Mul(d, new(big.Int).Exp(big.NewInt(10), big.NewInt(-shift), nil))
	}
	neg := (n.Sign() < 0) != (d.Sign() < 0)
	n.Abs(n)
	d.Abs(d)
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	if r.Mul(r, big.NewInt(2)).Cmp(d) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	return decimal128.FromBigInt(q)
}

// --- sum/avg over floats ---

type sumFloatAcc struct {
	avg bool
	s   []float64
	n   []int64
}

func (a *sumFloatAcc) Grow(n int) {
	for len(a.n) < n {
		a.s, a.n = append(a.s, 0), append(a.n, 0)
	}
}

func (a *sumFloatAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	vs := arg.(*array.Float64).Float64Values()
	noNulls := arg.NullN() == 0
	for i, g := range gids {
		if !noNulls && arg.IsNull(i) {
			continue
		}
		s := sign(signs, i)
		a.s[g] += float64(s) * vs[i]
		a.n[g] += s
	}
	return nil
}

func (a *sumFloatAcc) Result(gid int32) types.Datum {
	if a.n[gid] == 0 {
		return types.Null
	}
	if a.avg {
		return types.Float(a.s[gid] / float64(a.n[gid]))
	}
	return types.Float(a.s[gid])
}

func (a *sumFloatAcc) Reset(gid int32) { a.s[gid], a.n[gid] = 0, 0 }

func (a *sumFloatAcc) Encode(buf []byte, gid int32) []byte {
	buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(a.s[gid]))
	return binary.AppendVarint(buf, a.n[gid])
}

func (a *sumFloatAcc) Decode(buf []byte, gid int32) ([]byte, error) {
	if len(buf) < 8 {
		return nil, opkit.ErrCorruptState
	}
	a.s[gid] = math.Float64frombits(binary.BigEndian.Uint64(buf))
	v, k := binary.Varint(buf[8:])
	if k <= 0 {
		return nil, opkit.ErrCorruptState
	}
	a.n[gid] = v
	return buf[8+k:], nil
}

// --- sum/avg over numeric ---

type sumDecAcc struct {
	avg     bool
	in, out types.T
	s       []decimal128.Num
	x       []int64 // the high words of wide sums (widesum.go)
	n       []int64
	// Unconstrained input only (nil otherwise): the sum's display scale is
	// the largest of its values' (PostgreSQL's maxScale), of the values
	// still in it after retractions. Each group counts its values per
	// display scale in scaleSlots slots of sc (flat: no allocation per
	// group), and the scales past those in more (a map entry only for the
	// rare group with more distinct scales); ds is the largest scale seen,
	// the answer for a group whose state predates the counts (over).
	ds   []int32
	sc   []scaleCount
	more map[int32][]scaleCount
	over []bool
}

// scaleSlots is how many distinct display scales a sum's group counts.
const scaleSlots = 4

// scaleCount is how many of a group's values have display scale s.
type scaleCount struct {
	n int64
	s int32
}

func (a *sumDecAcc) Grow(n int) {
	for len(a.n) < n {
		a.s, a.n, a.x = append(a.s, decimal128.Num{}), append(a.n, 0), append(a.x, 0)
		if a.in.Prec == 0 {
			a.ds, a.over = append(a.ds, 0), append(a.over, false)
			a.sc = append(a.sc, make([]scaleCount, scaleSlots)...)
		}
	}
}

// dscale is the display scale of group gid's sum.
func (a *sumDecAcc) dscale(gid int32) int32 {
	if a.in.Prec > 0 {
		return a.in.Scale
	}
	if a.over[gid] {
		return a.ds[gid]
	}
	var m int32
	for _, c := range a.sc[int(gid)*scaleSlots : int(gid+1)*scaleSlots] {
		if c.n > 0 {
			m = max(m, c.s)
		}
	}
	for _, c := range a.more[gid] {
		if c.n > 0 {
			m = max(m, c.s)
		}
	}
	return m
}

// scalesOf calls fn with each display scale group gid counts values of.
func (a *sumDecAcc) scalesOf(gid int32, fn func(c scaleCount)) {
	for _, c := range a.sc[int(gid)*scaleSlots : int(gid+1)*scaleSlots] {
		if c.n != 0 {
			fn(c)
		}
	}
	for _, c := range a.more[gid] {
		if c.n != 0 {
			fn(c)
		}
	}
}

// countScale adds d values of display scale s to group g's counts.
func (a *sumDecAcc) countScale(g int32, s int32, d int64) {
	a.ds[g] = max(a.ds[g], s)
	if a.over[g] {
		return
	}
	slots := a.sc[int(g)*scaleSlots : int(g+1)*scaleSlots]
	free := -1
	for i := range slots {
		if slots[i].n != 0 && slots[i].s == s {
			slots[i].n += d
			return
		}
		if slots[i].n == 0 && free < 0 {
			free = i
		}
	}
	if free >= 0 {
		for i, c := range a.more[g] { // a scale counted past the slots first
			if c.s == s {
				slots[free] = scaleCount{n: c.n + d, s: s}
				a.more[g] = append(a.more[g][:i], a.more[g][i+1:]...)
				return
			}
		}
		slots[free] = scaleCount{n: d, s: s}
		return
	}
	// More distinct scales than slots.
	if a.more == nil {
		a.more = map[int32][]scaleCount{}
	}
	more := a.more[g]
	for i := range more {
		if more[i].s == s {
			more[i].n += d
			return
		}
	}
	a.more[g] = append(more, scaleCount{n: d, s: s})
}

// trackDS counts each group's inputs by display scale (unconstrained
// input only; a typed loop over the carried bytes).
func (a *sumDecAcc) trackDS(gids []int32, arg arrow.Array, signs []int8) {
	ds := types.DScales(arg)
	vs := arg.(*array.Decimal128).Values()
	noNulls := arg.NullN() == 0
	for i, g := range gids {
		if !noNulls && arg.IsNull(i) {
			continue
		}
		var s int32
		if ds != nil && ds[i] > 0 {
			s = int32(ds[i]) - 1
		} else {
			s = types.DisplayScale(vs[i], a.in.Scale)
		}
		a.countScale(g, s, sign(signs, i))
	}
}

// mergeScales folds group src's display-scale counts into dst's.
func (a *sumDecAcc) mergeScales(dst, src int32) {
	if a.ds == nil {
		return
	}
	if a.over[src] {
		a.over[dst] = true
	}
	a.scalesOf(src, func(c scaleCount) { a.countScale(dst, c.s, c.n) })
	a.ds[dst] = max(a.ds[dst], a.ds[src])
}

func (a *sumDecAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	vs := arg.(*array.Decimal128).Values()
	noNulls := arg.NullN() == 0
	for i, g := range gids {
		if !noNulls && arg.IsNull(i) {
			continue
		}
		s, v := sign(signs, i), vs[i]
		if s < 0 {
			v = v.Negate() // |v| < 10^38: no overflow
		}
		a.x[g], a.s[g] = addWide(a.x[g], a.s[g], v)
		a.n[g] += s
	}
	if a.ds != nil {
		a.trackDS(gids, arg, signs)
	}
	return nil
}

func (a *sumDecAcc) Result(gid int32) types.Datum {
	d, _ := a.result(gid)
	return d
}

// CheckResult reports a sum or average that its result type cannot hold
// (22003); Result is then NULL.
func (a *sumDecAcc) CheckResult(gid int32) error {
	_, err := a.result(gid)
	return err
}

func (a *sumDecAcc) result(gid int32) (types.Datum, error) {
	if a.n[gid] == 0 {
		return types.Null, nil
	}
	if a.avg {
		return avgWide(wideBig(a.x[gid], a.s[gid]), a.in.Scale, a.dscale(gid), a.n[gid], a.out)
	}
	if !fits128(a.x[gid], a.s[gid]) {
		return types.Null, errSumRange()
	}
	d := types.Datum{D: a.s[gid]}
	if a.out.Scale != a.in.Scale {
		d.D = divDecimal(a.s[gid], a.in.Scale, 1, a.out.Scale)
	}
	if a.out.Prec == 0 {
		// Held exactly unless the output's storage scale is below the
		// input's: a display scale past the storage scale (a quotient
		// padded with zeros, types.NumericDivHeld) stays exact in a sum.
		ds := a.dscale(gid)
		if a.out.Scale < a.in.Scale {
			ds = min(ds, a.out.Scale)
		}
		d.DS = types.PackDScale(ds)
	}
	return d, nil
}

// avgDatum is avgWide of a sum that a Decimal128 holds, whose average
// fits avg's result (an integer sum's: avg(bigint) holds 22 digits).
func avgDatum(sum decimal128.Num, ss, ds int32, n int64, out types.T) types.Datum {
	d, _ := avgWide(sum.BigInt(), ss, ds, n, out)
	return d
}

func (a *sumDecAcc) Reset(gid int32) {
	a.s[gid], a.n[gid], a.x[gid] = decimal128.Num{}, 0, 0
	if a.ds != nil {
		a.ds[gid], a.over[gid] = 0, false
		clear(a.sc[int(gid)*scaleSlots : int(gid+1)*scaleSlots])
		delete(a.more, gid)
	}
}

func (a *sumDecAcc) Encode(buf []byte, gid int32) []byte {
	if s := a.s[gid]; !fits128(a.x[gid], s) || s == wideSentinel || a.avg {
		// Always for avg: state without the mark is older, its sum held
		// at the average's scale (decodeOldAvg).
		buf = binary.BigEndian.AppendUint64(buf, uint64(wideSentinel.HighBits()))
		buf = binary.BigEndian.AppendUint64(buf, wideSentinel.LowBits())
		buf = binary.AppendVarint(buf, a.x[gid])
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(a.s[gid].HighBits()))
	buf = binary.BigEndian.AppendUint64(buf, a.s[gid].LowBits())
	buf = binary.AppendVarint(buf, a.n[gid])
	if a.ds == nil {
		return buf
	}
	// Unconstrained input: the largest display scale seen, a byte below
	// 0x80 (all state written before the counts has), or 0x80 + k and
	// the k counted scales (scale byte, count) after it.
	if a.over[gid] {
		return append(buf, byte(a.ds[gid]))
	}
	k := 0
	a.scalesOf(gid, func(scaleCount) { k++ })
	k = min(k, 0x7f) // always: scales are at most types.MaxDScale
	buf = append(buf, 0x80|byte(k))
	a.scalesOf(gid, func(c scaleCount) {
		if k > 0 {
			buf = binary.AppendVarint(append(buf, byte(c.s)), c.n)
			k--
		}
	})
	return buf
}

func (a *sumDecAcc) Decode(buf []byte, gid int32) ([]byte, error) {
	if len(buf) < 16 {
		return nil, opkit.ErrCorruptState
	}
	a.s[gid] = decimal128.New(int64(binary.BigEndian.Uint64(buf)), binary.BigEndian.Uint64(buf[8:]))
	a.x[gid] = a.s[gid].HighBits() >> 63
	if a.s[gid] == wideSentinel { // a wide sum: its high word, then its low 128 bits
		x, k := binary.Varint(buf[16:])
		if k <= 0 || len(buf) < 32+k {
			return nil, opkit.ErrCorruptState
		}
		buf = buf[16+k:]
		a.x[gid], a.s[gid] = x, decimal128.New(int64(binary.BigEndian.Uint64(buf)), binary.BigEndian.Uint64(buf[8:]))
	} else if a.avg {
		a.s[gid] = oldAvgSum(a.s[gid], a.in)
	}
	v, k := binary.Varint(buf[16:])
	if k <= 0 {
		return nil, opkit.ErrCorruptState
	}
	a.n[gid] = v
	buf = buf[16+k:]
	if a.ds != nil {
		if len(buf) < 1 {
			return nil, opkit.ErrCorruptState
		}
		b := buf[0]
		buf = buf[1:]
		slots := a.sc[int(gid)*scaleSlots : int(gid+1)*scaleSlots]
		clear(slots)
		delete(a.more, gid)
		if b < 0x80 {
			a.ds[gid], a.over[gid] = int32(b), true // written before the counts
			return buf, nil
		}
		a.ds[gid], a.over[gid] = 0, false
		k := int(b &^ 0x80)
		for i := range k {
			if len(buf) < 2 {
				return nil, opkit.ErrCorruptState
			}
			n, m := binary.Varint(buf[1:])
			if m <= 0 {
				return nil, opkit.ErrCorruptState
			}
			if c := (scaleCount{n: n, s: int32(buf[0])}); i < scaleSlots {
				slots[i] = c
			} else {
				if a.more == nil {
					a.more = map[int32][]scaleCount{}
				}
				a.more[gid] = append(a.more[gid], c)
			}
			a.ds[gid] = max(a.ds[gid], int32(buf[0]))
			buf = buf[1+m:]
		}
	}
	return buf, nil
}

// --- sum/avg over intervals ---

type sumIntervalAcc struct {
	avg bool
	s   []arrow.MonthDayNanoInterval
	n   []int64
}

func (a *sumIntervalAcc) Grow(n int) {
	for len(a.n) < n {
		a.s, a.n = append(a.s, arrow.MonthDayNanoInterval{}), append(a.n, 0)
	}
}

func (a *sumIntervalAcc) Update(gids []int32, arg arrow.Array, signs []int8) error {
	vs := arg.(*array.MonthDayNanoInterval).MonthDayNanoIntervalValues()
	for i, g := range gids {
		if arg.IsNull(i) {
			continue
		}
		s := sign(signs, i)
		a.s[g].Months += int32(s) * vs[i].Months
		a.s[g].Days += int32(s) * vs[i].Days
		a.s[g].Nanoseconds += s * vs[i].Nanoseconds
		a.n[g] += s
	}
	return nil
}

func (a *sumIntervalAcc) Result(gid int32) types.Datum {
	if a.n[gid] == 0 {
		return types.Null
	}
	v := a.s[gid]
	if a.avg {
		n := a.n[gid]
		// PostgreSQL cascades the fractional months and days down.
		months := float64(v.Months) / float64(n)
		days := float64(v.Days)/float64(n) + (months-math.Trunc(months))*30
		nanos := float64(v.Nanoseconds)/float64(n) + (days-math.Trunc(days))*86400e9
		v = arrow.MonthDayNanoInterval{Months: int32(months), Days: int32(days), Nanoseconds: int64(math.Round(nanos/1000)) * 1000}
	}
	return types.Datum{IV: v}
}

func (a *sumIntervalAcc) Reset(gid int32) { a.s[gid], a.n[gid] = arrow.MonthDayNanoInterval{}, 0 }

func (a *sumIntervalAcc) Encode(buf []byte, gid int32) []byte {
	v := a.s[gid]
	buf = binary.AppendVarint(buf, int64(v.Months))
	buf = binary.AppendVarint(buf, int64(v.Days))
	buf = binary.AppendVarint(buf, v.Nanoseconds)
	return binary.AppendVarint(buf, a.n[gid])
}

func (a *sumIntervalAcc) Decode(buf []byte, gid int32) ([]byte, error) {
	var vals [4]int64
	for i := range vals {
		v, k := binary.Varint(buf)
		if k <= 0 {
			return nil, opkit.ErrCorruptState
		}
		vals[i], buf = v, buf[k:]
	}
	a.s[gid] = arrow.MonthDayNanoInterval{Months: int32(vals[0]), Days: int32(vals[1]), Nanoseconds: vals[2]}
	a.n[gid] = vals[3]
	return buf, nil
}

// AppendResults appends to cols one column per aggregate with the results
// of groups gids; on an error it releases cols.
func AppendResults(mem memory.Allocator, aggs []Spec, accs []Accum, gids []int32, cols []arrow.Array) ([]arrow.Array, error) {
	for i, acc := range accs {
		t := aggs[i].T
		bl := types.NewBuilder(mem, t)
		bl.Reserve(len(gids))
		for _, g := range gids {
			if c, ok := acc.(interface{ CheckResult(int32) error }); ok {
				if err := c.CheckResult(g); err != nil {
					bl.Release()
					opkit.ReleaseAll(cols)
					return nil, err
				}
			}
			types.AppendDatum(bl, acc.Result(g), t)
		}
		cols = append(cols, bl.NewArray())
		bl.Release()
	}
	return cols, nil
}
