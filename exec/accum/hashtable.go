package accum

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/opkit"
	"github.com/streamdb/streamdb/types"
)

// GroupTable maps key tuples to dense group ids. Keys are stored
// column-wise in typed slices; lookups hash a whole batch column-at-a-time,
// then probe an open-addressing table of group ids.
type GroupTable struct {
	cols   []keyCol
	Hashes []uint64 // per group
	slots  []slot   // open addressing; gid 0 is empty
	mask   uint64

	// Free holds the ids of evicted groups, reused before new ones.
	Free []int32
	// Created lists the groups the last lookup created.
	Created []int32

	// scratch, reused across batches
	h []uint64
}

// slot holds a group id + 1 (0: empty) and the low 32 bits of its hash: a
// probe rejects most mismatches without touching the group's arrays, and
// the slot's home (hash & mask; tables have at most 2^32 slots, as group
// ids are int32) is known without reading the group's hash, which keeps
// removal and growth to the slot array.
type slot struct {
	tag uint32
	gid int32
}

type keyCol struct {
	t     types.T
	ints  []int64
	flts  []float64
	decs  []decimal128.Num
	dss   []int8 // unconstrained NUMERIC: the group's first value's display scale (types/dscale.go)
	strs  []string
	ivs   []arrow.MonthDayNanoInterval
	uids  [][16]byte // uuid
	nulls []bool
}

func NewGroupTable(ts []types.T) *GroupTable {
	g := &GroupTable{cols: make([]keyCol, len(ts)), slots: make([]slot, 1024), mask: 1023}
	for i, t := range ts {
		g.cols[i].t = t
	}
	return g
}

// Len is the number of groups.
func (g *GroupTable) Len() int { return len(g.Hashes) }

const hashSeed = 0x9e3779b97f4a7c15

// HashColumns computes one hash per row over the key arrays.
func HashColumns(h []uint64, keys []arrow.Array, n int) []uint64 {
	if cap(h) < n {
		h = make([]uint64, n)
	}
	h = h[:n]
	for i := range h {
		h[i] = hashSeed
	}
	var prev []uint64
	for _, a := range keys {
		nulls := a.NullN() > 0
		if nulls {
			// A NULL hashes the same whatever its slot holds.
			prev = append(prev[:0], h...)
		}
		switch a := a.(type) {
		case *array.Int64:
			vs := a.Int64Values()
			for i := range h {
				h[i] = opkit.Mix(h[i], uint64(vs[i]))
			}
		case *array.Float64:
			vs := a.Float64Values()
			for i := range h {
				f := vs[i]
				if f == 0 {
					f = 0 // -0 groups with 0
				}
				if f != f {
					f = math.NaN()
				}
				h[i] = opkit.Mix(h[i], math.Float64bits(f))
			}
		case *array.Boolean:
			for i := range h {
				v := uint64(0)
				if a.Value(i) {
					v = 1
				}
				h[i] = opkit.Mix(h[i], v)
			}
		case *array.String:
			for i := range h {
				h[i] = opkit.Mix(h[i], strHash(a.Value(i)))
			}
		case *array.FixedSizeBinary: // uuid
			for i := range h {
				h[i] = uuidHash(h[i], a.Value(i))
			}
		case *array.Decimal128:
			vs := a.Values()
			for i := range h {
				h[i] = opkit.Mix(opkit.Mix(h[i], uint64(vs[i].HighBits())), vs[i].LowBits())
			}
		case *array.MonthDayNanoInterval:
			vs := a.MonthDayNanoIntervalValues()
			for i := range h {
				h[i] = opkit.Mix(opkit.Mix(h[i], uint64(vs[i].Months)<<32|uint64(uint32(vs[i].Days))), uint64(vs[i].Nanoseconds))
			}
		}
		if nulls {
			for i := range h {
				if a.IsNull(i) {
					h[i] = opkit.Mix(prev[i], nullHash)
				}
			}
		}
	}
	return h
}

const nullHash = 0x5bd1e995

// HashDatums hashes one row of boxed key values exactly as HashColumns
// hashes the same values in arrays.
func HashDatums(ds []types.Datum, ts []types.T) uint64 {
	h := uint64(hashSeed)
	for i, d := range ds {
		if d.Null {
			h = opkit.Mix(h, nullHash)
			continue
		}
		switch ts[i].Physical() {
		case types.PhysInt64:
			h = opkit.Mix(h, uint64(d.I))
		case types.PhysBool:
			h = opkit.Mix(h, uint64(d.I&1))
		case types.PhysFloat64:
			f := d.F
			if f == 0 {
				f = 0
			}
			if f != f {
				f = math.NaN()
			}
			h = opkit.Mix(h, math.Float64bits(f))
		case types.PhysString:
			h = opkit.Mix(h, strHash(d.S))
		case types.PhysUUID:
			u := types.UUIDBytes(d.S)
			h = uuidHash(h, u[:])
		case types.PhysDecimal:
			h = opkit.Mix(opkit.Mix(h, uint64(d.D.HighBits())), d.D.LowBits())
		case types.PhysInterval:
			h = opkit.Mix(opkit.Mix(h, uint64(d.IV.Months)<<32|uint64(uint32(d.IV.Days))), uint64(d.IV.Nanoseconds))
		}
	}
	return h
}

// uuidHash mixes a uuid's 16 bytes into h.
func uuidHash(h uint64, u []byte) uint64 {
	return opkit.Mix(opkit.Mix(h, binary.BigEndian.Uint64(u)), binary.BigEndian.Uint64(u[8:]))
}

func strHash(s string) uint64 {
	// FNV-1a over 8-byte words is enough here; opkit.Mix() finishes it.
	h := uint64(14695981039346656037)
	for len(s) >= 8 {
		v := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = (h ^ v) * 1099511628211
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// lookup fills gids with the group of each row; rows whose key is new get a
// new group if insert, else -1. It returns the number of new groups.
func (g *GroupTable) Lookup(keys []arrow.Array, n int, gids []int32, insert bool) int {
	g.h = HashColumns(g.h, keys, n)
	g.Created = g.Created[:0]
	created := 0
	single := len(keys) == 1 && keys[0].NullN() == 0
	var ints []int64
	if single {
		if a, ok := keys[0].(*array.Int64); ok {
			ints = a.Int64Values()
		}
	}
	for i := 0; i < n; i++ {
		h := g.h[i]
		tag := uint32(h)
		pos := h & g.mask
		for {
			s := g.slots[pos]
			if s.gid == 0 {
				if !insert {
					gids[i] = -1
					break
				}
				var gid int32
				if n := len(g.Free); n > 0 {
					gid = g.Free[n-1]
					g.Free = g.Free[:n-1]
					g.Hashes[gid] = h
					g.setKey(gid, keys, i)
				} else {
					gid = int32(len(g.Hashes))
					g.Hashes = append(g.Hashes, h)
					g.appendKey(keys, i)
				}
				g.slots[pos] = slot{tag: tag, gid: gid + 1}
				gids[i] = gid
				g.Created = append(g.Created, gid)
				created++
				if uint64(len(g.Hashes))*2 > g.mask {
					g.Grow()
				}
				break
			}
			gid := s.gid - 1
			if s.tag == tag {
				if ints != nil {
					// One non-null BIGINT key: the key itself decides.
					if g.cols[0].ints[gid] == ints[i] && !g.cols[0].nulls[gid] {
						gids[i] = gid
						break
					}
				} else if g.Hashes[gid] == h && g.equal(gid, keys, i) {
					gids[i] = gid
					break
				}
			}
			pos = (pos + 1) & g.mask
		}
	}
	return created
}

func (g *GroupTable) Grow() {
	n := len(g.slots) * 2
	g.slots = make([]slot, n)
	g.mask = uint64(n - 1)
	for gid, h := range g.Hashes {
		g.place(h, int32(gid))
	}
}

// place puts group gid, of hash h, in the first free slot from its home.
func (g *GroupTable) place(h uint64, gid int32) {
	pos := h & g.mask
	for g.slots[pos].gid != 0 {
		pos = (pos + 1) & g.mask
	}
	g.slots[pos] = slot{tag: uint32(h), gid: gid + 1}
}

// remove takes group gid out of the table (backward-shift deletion, so
// probe chains stay intact) and frees its id for reuse.
func (g *GroupTable) Remove(gid int32) {
	hole := g.Hashes[gid] & g.mask
	for g.slots[hole].gid != gid+1 {
		hole = (hole + 1) & g.mask
	}
	for j := (hole + 1) & g.mask; g.slots[j].gid != 0; j = (j + 1) & g.mask {
		home := uint64(g.slots[j].tag) & g.mask
		// The entry at j may fill the hole unless its home lies cyclically
		// in (hole, j].
		if (j-home)&g.mask >= (j-hole)&g.mask {
			g.slots[hole] = g.slots[j]
			hole = j
		}
	}
	g.slots[hole] = slot{}
	for c := range g.cols {
		if g.cols[c].strs != nil {
			g.cols[c].strs[gid] = ""
		}
	}
	g.Free = append(g.Free, gid)
}

// approxBytes estimates the table's memory without walking its groups:
// slots, hashes and the fixed-width key slots (string contents excluded).
func (g *GroupTable) ApproxBytes() int64 {
	return 8*int64(len(g.slots)) + int64(g.Len())*(8+24*int64(len(g.cols)))
}

// keyBytes is the memory of group gid's key strings.
func (g *GroupTable) KeyBytes(gid int32) int64 {
	var n int64
	for c := range g.cols {
		if g.cols[c].strs != nil {
			n += int64(len(g.cols[c].strs[gid]))
		}
	}
	return n
}

// setKey writes row i's key into the reused group id gid.
func (g *GroupTable) setKey(gid int32, keys []arrow.Array, i int) {
	g.appendKey(keys, i)
	for c := range g.cols {
		kc := &g.cols[c]
		last := len(kc.nulls) - 1
		kc.nulls = moveLast(kc.nulls, gid)
		switch {
		case kc.ints != nil && len(kc.ints) == last+1:
			kc.ints = moveLast(kc.ints, gid)
		case kc.flts != nil && len(kc.flts) == last+1:
			kc.flts = moveLast(kc.flts, gid)
		case kc.strs != nil && len(kc.strs) == last+1:
			kc.strs = moveLast(kc.strs, gid)
		case kc.decs != nil && len(kc.decs) == last+1:
			kc.decs = moveLast(kc.decs, gid)
		case kc.ivs != nil && len(kc.ivs) == last+1:
			kc.ivs = moveLast(kc.ivs, gid)
		case kc.uids != nil && len(kc.uids) == last+1:
			kc.uids = moveLast(kc.uids, gid)
		}
		if kc.dss != nil && len(kc.dss) == last+1 {
			kc.dss = moveLast(kc.dss, gid)
		}
	}
}

// moveLast moves s's last element to index to and drops the last slot.
func moveLast[T any](s []T, to int32) []T {
	last := len(s) - 1
	s[to] = s[last]
	return s[:last]
}

func (g *GroupTable) appendKey(keys []arrow.Array, i int) {
	for c, a := range keys {
		kc := &g.cols[c]
		null := a.IsNull(i)
		kc.nulls = append(kc.nulls, null)
		switch a := a.(type) {
		case *array.Int64:
			kc.ints = append(kc.ints, a.Value(i))
		case *array.Float64:
			f := a.Value(i)
			if f == 0 {
				f = 0
			}
			kc.flts = append(kc.flts, f)
		case *array.Boolean:
			v := int64(0)
			if !null && a.Value(i) {
				v = 1
			}
			kc.ints = append(kc.ints, v)
		case *array.String:
			s := ""
			if !null {
				s = string([]byte(a.Value(i))) // own the bytes: the batch is released
			}
			kc.strs = append(kc.strs, s)
		case *array.Decimal128:
			kc.decs = append(kc.decs, a.Value(i))
			if kc.t.Prec == 0 {
				var b int8
				if ds := types.DScales(a); ds != nil {
					b = ds[i]
				}
				kc.dss = append(kc.dss, b)
			}
		case *array.MonthDayNanoInterval:
			kc.ivs = append(kc.ivs, a.Value(i))
		case *array.FixedSizeBinary:
			var u [16]byte
			if !null {
				copy(u[:], a.Value(i))
			}
			kc.uids = append(kc.uids, u)
		default:
			kc.ints = append(kc.ints, 0) // NullArray
		}
	}
}

func (g *GroupTable) equal(gid int32, keys []arrow.Array, i int) bool {
	for c, a := range keys {
		kc := &g.cols[c]
		null := a.IsNull(i)
		if null != kc.nulls[gid] {
			return false
		}
		if null {
			continue
		}
		switch a := a.(type) {
		case *array.Int64:
			if kc.ints[gid] != a.Value(i) {
				return false
			}
		case *array.Float64:
			f := a.Value(i)
			if f != kc.flts[gid] && !(f != f && kc.flts[gid] != kc.flts[gid]) {
				return false
			}
		case *array.Boolean:
			if (kc.ints[gid] == 1) != a.Value(i) {
				return false
			}
		case *array.String:
			if kc.strs[gid] != a.Value(i) {
				return false
			}
		case *array.Decimal128:
			if kc.decs[gid] != a.Value(i) {
				return false
			}
		case *array.MonthDayNanoInterval:
			if kc.ivs[gid] != a.Value(i) {
				return false
			}
		case *array.FixedSizeBinary:
			if kc.uids[gid] != [16]byte(a.Value(i)) {
				return false
			}
		}
	}
	return true
}

// keyDatum returns group gid's value of key column c.
func (g *GroupTable) KeyDatum(c int, gid int32) types.Datum {
	kc := &g.cols[c]
	if kc.nulls[gid] {
		return types.Null
	}
	switch kc.t.Physical() {
	case types.PhysInt64, types.PhysBool:
		return types.Datum{I: kc.ints[gid]}
	case types.PhysFloat64:
		return types.Datum{F: kc.flts[gid]}
	case types.PhysString:
		return types.Datum{S: kc.strs[gid]}
	case types.PhysDecimal:
		if kc.dss != nil {
			return types.Datum{D: kc.decs[gid], DS: kc.dss[gid]}
		}
		return types.Datum{D: kc.decs[gid]}
	case types.PhysInterval:
		return types.Datum{IV: kc.ivs[gid]}
	case types.PhysUUID:
		return types.Str(types.UUIDText(kc.uids[gid][:]))
	}
	return types.Null
}

// SetKeyDS sets the display-scale byte of group gid's value of key
// column c, an unconstrained NUMERIC (restored from state, whose keys
// encode values without it).
func (g *GroupTable) SetKeyDS(c int, gid int32, ds int8) {
	if kc := &g.cols[c]; kc.dss != nil {
		kc.dss[gid] = ds
	}
}

// AppendKeyScales appends the display-scale bytes of group gid's
// unconstrained NUMERIC key values to buf, one per such key column in
// column order (none if the table has no such column): state keys encode
// values without them (1.5 and 1.50 are one key), so an operator that
// saves its groups keeps them beside the key to print the group's first
// value's digits after a restart (SetKeyScales).
func (g *GroupTable) AppendKeyScales(buf []byte, gid int32) []byte {
	for c := range g.cols {
		if kc := &g.cols[c]; kc.t.Kind == types.Numeric && kc.t.Prec == 0 {
			b := int8(0)
			if kc.dss != nil {
				b = kc.dss[gid]
			}
			buf = append(buf, byte(b))
		}
	}
	return buf
}

// SetKeyScales restores group gid's key display scales from b, as
// AppendKeyScales wrote them; it returns the bytes after them (b itself,
// unchanged, if b is too short).
func (g *GroupTable) SetKeyScales(gid int32, b []byte) []byte {
	n := 0
	for c := range g.cols {
		if kc := &g.cols[c]; kc.t.Kind == types.Numeric && kc.t.Prec == 0 {
			n++
		}
	}
	if len(b) < n {
		return b
	}
	i := 0
	for c := range g.cols {
		if kc := &g.cols[c]; kc.t.Kind == types.Numeric && kc.t.Prec == 0 {
			g.SetKeyDS(c, gid, int8(b[i]))
			i++
		}
	}
	return b[n:]
}

// insertDatums adds a group from boxed key values that are not in the
// table yet (used when loading state, whose keys are unique).
func (g *GroupTable) InsertDatums(ds []types.Datum) int32 {
	ts := make([]types.T, len(g.cols))
	for i := range g.cols {
		ts[i] = g.cols[i].t
	}
	h := HashDatums(ds, ts)
	var gid int32
	if n := len(g.Free); n > 0 {
		gid = g.Free[n-1]
		g.Free = g.Free[:n-1]
		g.Hashes[gid] = h
		g.setKeyDatums(gid, ds)
	} else {
		gid = int32(len(g.Hashes))
		g.Hashes = append(g.Hashes, h)
		g.appendKeyDatums(ds)
	}
	g.place(h, gid)
	if uint64(len(g.Hashes))*2 > g.mask {
		g.Grow()
	}
	return gid
}

func (g *GroupTable) appendKeyDatums(ds []types.Datum) {
	for c, d := range ds {
		kc := &g.cols[c]
		kc.nulls = append(kc.nulls, d.Null)
		switch kc.t.Physical() {
		case types.PhysInt64, types.PhysBool:
			kc.ints = append(kc.ints, d.I)
		case types.PhysFloat64:
			kc.flts = append(kc.flts, d.F)
		case types.PhysString:
			kc.strs = append(kc.strs, d.S)
		case types.PhysDecimal:
			kc.decs = append(kc.decs, d.D)
			if kc.t.Prec == 0 {
				kc.dss = append(kc.dss, d.DS)
			}
		case types.PhysInterval:
			kc.ivs = append(kc.ivs, d.IV)
		case types.PhysUUID:
			var u [16]byte
			if !d.Null {
				u = types.UUIDBytes(d.S)
			}
			kc.uids = append(kc.uids, u)
		default:
			kc.ints = append(kc.ints, 0)
		}
	}
}

func (g *GroupTable) setKeyDatums(gid int32, ds []types.Datum) {
	for c, d := range ds {
		kc := &g.cols[c]
		kc.nulls[gid] = d.Null
		switch kc.t.Physical() {
		case types.PhysInt64, types.PhysBool:
			kc.ints[gid] = d.I
		case types.PhysFloat64:
			kc.flts[gid] = d.F
		case types.PhysString:
			kc.strs[gid] = d.S
		case types.PhysDecimal:
			kc.decs[gid] = d.D
			if kc.dss != nil {
				kc.dss[gid] = d.DS
			}
		case types.PhysInterval:
			kc.ivs[gid] = d.IV
		case types.PhysUUID:
			var u [16]byte
			if !d.Null {
				u = types.UUIDBytes(d.S)
			}
			kc.uids[gid] = u
		default:
			kc.ints[gid] = 0
		}
	}
}

// buildKeys builds the key column c for groups gids, allocating from mem.
func (g *GroupTable) BuildKeys(mem memory.Allocator, c int, gids []int32) arrow.Array {
	kc := &g.cols[c]
	bl := types.NewBuilder(mem, kc.t)
	defer bl.Release()
	bl.Reserve(len(gids))
	switch b := bl.(type) {
	case *array.Int64Builder:
		for _, gid := range gids {
			if kc.nulls[gid] {
				b.AppendNull()
			} else {
				b.UnsafeAppend(kc.ints[gid])
			}
		}
	case *array.FixedSizeBinaryBuilder:
		for _, gid := range gids {
			if kc.nulls[gid] {
				b.AppendNull()
			} else {
				b.Append(kc.uids[gid][:])
			}
		}
	default:
		for _, gid := range gids {
			types.AppendDatum(bl, g.KeyDatum(c, gid), kc.t)
		}
	}
	return bl.NewArray()
}

// EncodedKeyHash is the hash of a key encoded by opkit.EncodeDatum, as
// HashColumns gives it for the key's columns of types ts.
func EncodedKeyHash(key string, ts []types.T) uint64 {
	ds := make([]types.Datum, len(ts))
	rest := []byte(key)
	for c, t := range ts {
		ds[c], rest, _ = opkit.DecodeDatum(rest, t)
	}
	return HashDatums(ds, ts)
}
