package bind

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/types"
)

// More of PostgreSQL's everyday functions (issue 30; decision record
// docs/decisions/2026-12-07-pg-more-functions.md): the NUMERIC forms of
// sqrt, ln, exp, log and log(b, x), the bytea functions (sha224 ... sha512,
// encode, decode), overlay and the text-array splitters. Their overloads are
// entries of pgSigs (funcs_pg.go) and resolve as the others do.

// numericTransRes is the result type of a NUMERIC transcendental kernel:
// unconstrained NUMERIC whose values carry PostgreSQL's result scale
// (exec/expr/numtrans.go), held at a storage scale that suits the values
// each function gives: a logarithm is small (8 integer digits, 30
// fraction digits: ln of any NUMERIC streamdb holds is below 100, and
// near 1 it needs 16 digits after its leading zeros); a root or an
// exponential spans more (14 integer digits and 24 fraction digits:
// sqrt of a 28-digit value, exp up to about 32, exp down to about -18).
func numericTransRes(kernel string) types.T {
	if kernel == "sqrt_numeric" || kernel == "exp_numeric" {
		return types.T{Kind: types.Numeric, Scale: 24}
	}
	return types.T{Kind: types.Numeric, Scale: maxStaticScale}
}

var (
	tBytea = types.TBytea
	tTA    = types.TTextArray
)

func init() {
	for name, sigs := range map[string][]pgSig{
		"sha224": {sig(tBytea, "sha224", tBytea)}, "sha256": {sig(tBytea, "sha256", tBytea)},
		"sha384": {sig(tBytea, "sha384", tBytea)}, "sha512": {sig(tBytea, "sha512", tBytea)},
		"encode":                {sig(tS, "encode", tBytea, tS)},
		"decode":                {sig(tBytea, "decode", tS, tS)},
		"string_to_array":       {sig(tTA, "string_to_array", tS, tS), sig(tTA, "string_to_array", tS, tS, tS)},
		"regexp_split_to_array": {sig(tTA, "regexp_split_to_array", tS, tS), sig(tTA, "regexp_split_to_array", tS, tS, tS)},
		// overlay(s PLACING t FROM n [FOR m]) arrives from the dialect layer as this call.
		"overlay": {sig(tS, "overlay", tS, tS, tI4, tI4), sig(tS, "overlay", tS, tS, tI4),
			sig(tBytea, "overlay_bytea", tBytea, tBytea, tI4, tI4), sig(tBytea, "overlay_bytea", tBytea, tBytea, tI4)},
	} {
		pgSigs[name] = sigs
	}
}

// moreArgs adjusts the arguments of the kernels above: log(x) and
// log10(x) of numeric are log(10, x), as PostgreSQL defines them.
func moreArgs(s pgSig, args []expr.Expr) (pgSig, []expr.Expr) {
	if s.kernel == "log10_numeric" {
		ten, _ := types.ParseText("10", numType(0))
		args = append([]expr.Expr{&expr.Const{D: ten, T: numType(0)}}, args...)
		s.kernel = "log_numeric"
	}
	return s, args
}
