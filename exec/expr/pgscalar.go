package expr

import (
	"math"
)

// pgScalarKernel picks the kernel of PostgreSQL's everyday scalar
// functions (mathfuncs.go, strfuncs_pg.go, formatfunc.go,
// datefuncs_pg.go). Operand types, as the binder (sql/bind/funcs_pg.go)
// guarantees:
//
//	sqrt cbrt ln log10 exp sign degrees radians sin cos tan cot asin acos atan  Float64 → Float64
//	atan2                         Float64, Float64 → Float64
//	random                        no args → Float64 (volatile: a value per row)
//	gcd, lcm                      Int64, Int64 → Int64
//	factorial                     Int64 → Numeric (scale 0)
//	div                           Numeric, Numeric → Numeric (scale 0)
//	width_bucket                  Float64, Float64, Float64, Int64 → Int32
//	lpad, rpad                    Text, Int64, Text → Text
//	left, right, repeat           Text, Int64 → Text
//	reverse, initcap, md5         Text → Text
//	translate                     Text, Text, Text → Text
//	chr                           Int64 → Text; to_hex, to_hex32: Int64 → Text
//	ascii, bit_length             Text → Int32; strpos: Text, Text → Int32
//	starts_with                   Text, Text → Bool
//	concat_ws, format             Text, Text... → Text
//	make_date                     Int64 ×3 → Date
//	make_timestamp                Int64 ×5, Float64 → Timestamp
//	make_interval                 Int64 ×6, Float64 → Interval
//	to_timestamp                  Float64 → TimestampTZ
//	age                           Timestamp, Timestamp → Interval
//	justify_hours/_days/_interval Interval → Interval
//	isfinite                      Date or Timestamp (or Interval) → Bool
//	clock_timestamp               no args → Timestamp
func pgScalarKernel(e *Func) (k kernel, lo, hi int, ok bool) {
	if f, isFloat := floatFuncs[e.Name]; isFloat {
		return floatFuncKernel(f, e.T), 1, 1, true
	}
	lo, hi = 1, 1
	switch e.Name {
	case "atan2":
		k, lo, hi = atan2Kernel(e.T), 2, 2
	case "random":
		k, lo, hi = randomKernel(e.T), 0, 0
	case "gcd":
		k, lo, hi = intFuncKernel(e.T, gcd), 2, 2
	case "lcm":
		k, lo, hi = intFuncKernel(e.T, lcm), 2, 2
	case "factorial":
		k = factorialKernel(e.T)
	case "div":
		k, lo, hi = divKernel(e.T), 2, 2
	case "width_bucket":
		k, lo, hi = widthBucketKernel(e.T), 4, 4
	case "lpad", "rpad":
		k, lo, hi = padKernel(e.Name == "lpad", e.T), 3, 3
	case "left", "right":
		k, lo, hi = leftRightKernel(e.Name == "right", e.T), 2, 2
	case "repeat":
		k, lo, hi = repeatKernel(e.T), 2, 2
	case "reverse":
		k = reverseKernel(e.T)
	case "initcap":
		k = initcapKernel(e.T)
	case "md5":
		k = md5Kernel(e.T)
	case "translate":
		k, lo, hi = translateKernel(e.T), 3, 3
	case "chr":
		k = chrKernel(e.T)
	case "to_hex":
		k = toHexKernel(64, e.T)
	case "to_hex32":
		k = toHexKernel(32, e.T)
	case "ascii":
		k = asciiKernel(e.T)
	case "bit_length":
		k = bitLengthKernel(e.T)
	case "strpos":
		k, lo, hi = strposKernel(e.T), 2, 2
	case "starts_with":
		k, lo, hi = startsWithKernel, 2, 2
	case "concat_ws":
		k, hi = concatWSKernel(e.T), math.MaxInt
	case "format":
		k, hi = formatKernel(e.T), math.MaxInt
	case "make_date":
		k, lo, hi = makeDateKernel(e.T), 3, 3
	case "make_timestamp":
		k, lo, hi = makeTimestampKernel(e.T), 6, 6
	case "make_interval":
		k, lo, hi = makeIntervalKernel(e.T), 7, 7
	case "to_timestamp":
		k = toTimestampKernel(e.T)
	case "age":
		k, lo, hi = ageKernel(e.T), 2, 2
	case "justify_hours", "justify_days", "justify_interval":
		k = justifyKernel(e.Name, e.T)
	case "isfinite":
		k = isfiniteKernel(argTypes(e.Args)[0])
	case "clock_timestamp":
		k, lo, hi = clockTimestampKernel(e.T), 0, 0
	default:
		return moreScalarKernel(e)
	}
	return k, lo, hi, true
}
