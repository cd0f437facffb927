package accum

// Mergeable reports whether the partial results of s merge (Merge): count,
// sum, avg, min and max without DISTINCT, as session windows need.
func Mergeable(s Spec) bool { return !s.Distinct && s.Kind < ArrayAgg }

// Merge folds group src's partial result into dst's; a is one of the
// accumulators Mergeable admits.
func Merge(a Accum, dst, src int32) {
	switch a := a.(type) {
	case *CountAcc:
		a.n[dst] += a.n[src]
	case *sumIntAcc:
		var c uint64
		a.lo[dst], c = addCarry(a.lo[dst], a.lo[src])
		a.hi[dst] += a.hi[src] + int64(c)
		a.n[dst] += a.n[src]
	case *sumFloatAcc:
		a.s[dst] += a.s[src]
		a.n[dst] += a.n[src]
	case *sumDecAcc:
		a.x[dst], a.s[dst] = mergeWide(a.x[dst], a.s[dst], a.x[src], a.s[src])
		a.n[dst] += a.n[src]
		a.mergeScales(dst, src)
	case *sumIntervalAcc:
		a.s[dst].Months += a.s[src].Months
		a.s[dst].Days += a.s[src].Days
		a.s[dst].Nanoseconds += a.s[src].Nanoseconds
		a.n[dst] += a.n[src]
	case *minMaxAcc:
		if d := a.get(src); !d.Null {
			a.offer(dst, d)
		}
	}
}

func addCarry(x, y uint64) (uint64, uint64) {
	s := x + y
	if s < x {
		return s, 1
	}
	return s, 0
}
