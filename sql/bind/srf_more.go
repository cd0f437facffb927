package bind

import (
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// srfOverArray maps each set-returning function that is the unnest of an
// array function to that function: string_to_table(s, d) yields the
// elements of string_to_array(s, d), regexp_split_to_table those of
// regexp_split_to_array, in order, as PostgreSQL's do.
var srfOverArray = map[string]string{"string_to_table": "string_to_array", "regexp_split_to_table": "regexp_split_to_array"}

// srfAsUnnest rewrites a call of a function of srfOverArray into unnest of
// its array function; other calls are returned as they are.
func (b *Binder) srfAsUnnest(fn string, args []expr.Expr) (string, []expr.Expr, error) {
	arr, ok := srfOverArray[fn]
	if !ok {
		return fn, args, nil
	}
	e, err := b.resolvePG(arr, pgSigs[arr], args)
	if sqlerr.Code(err) == sqlerr.UndefinedFunction {
		err = noFunction(fn, args)
	}
	if err != nil {
		return "", nil, err
	}
	return "unnest", []expr.Expr{e}, nil
}

// regexpMatchesArgs checks regexp_matches(text, text [, text]) (setof
// text[]) and casts its arguments in place.
func (b *Binder) regexpMatchesArgs(args []expr.Expr) (types.T, error) {
	if len(args) != 2 && len(args) != 3 {
		return types.T{}, noFunction("regexp_matches", args)
	}
	for i, a := range args {
		if k := a.Type().Kind; k != types.Text && k != types.Unknown {
			return types.T{}, noFunction("regexp_matches", args)
		}
		var err error
		if args[i], err = b.castTo(a, types.TText); err != nil {
			return types.T{}, err
		}
	}
	return types.TTextArray, nil
}
