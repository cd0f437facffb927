package parse

// JSONOpMarker is the function the dialect layer writes for PostgreSQL's
// json operators, which TiDB's grammar lacks:
//
//	a -> b   → a div pg_jsonop('->') div b    (and ->>, #>, #>>, @>, <@, ?, ?|, ?&)
//
// TiDB's DIV is the dialect's spelling of PostgreSQL's ^ too (rewrite.go):
// a chain of these is regrouped by the binder at PostgreSQL's levels
// (sql/bind chainOp), where the marker between two DIVs makes them one
// operator of the "any other operator" level, below + and -, above the
// comparisons: a->>'k' = 'v' is (a->>'k') = 'v', a->'k'->'j' is (a->'k')->'j'.
const JSONOpMarker = "pg_jsonop"

// jsonOp emits the json operator at token i; prim < 0 means it has no left operand.
func (r *rewriter) jsonOp(t token, i, prim int) error {
	if prim < 0 {
		return r.p.syntaxError(t) // streamdb has no prefix json operators
	}
	r.emit("div "+JSONOpMarker+"("+quote(t.Val)+") div", i, true)
	return nil
}

// jsonAggNames are PostgreSQL's json aggregates and the names TiDB's
// grammar parses as aggregates of the same shape, which the binder reads
// back (sql/bind jsonagg.go).
// array_agg is read as TiDB's bit_xor (a user's bit_xor is quoted:
// renamedAggregates).
var jsonAggNames = map[string]string{"jsonb_agg": "json_arrayagg", "jsonb_object_agg": "json_objectagg", "array_agg": "bit_xor"}

// aggMarkerPrefix begins the separator the parser gives group_concat for
// array_agg, jsonb_agg and jsonb_object_agg calls with DISTINCT or ORDER BY
// inside (TiDB's grammar takes them only in group_concat). It starts with
// a NUL, which no PostgreSQL string can hold, so no string_agg delimiter
// is taken for it.
const aggMarkerPrefix = "\x00streamdb:"

// aggMarkerSQL is the separator literal, as TiDB text, for aggregate fn.
func aggMarkerSQL(fn string) string { return `'\0streamdb:` + fn + `'` }

// AggFromMarker returns the aggregate a group_concat separator stands for.
func AggFromMarker(sep string) (string, bool) {
	if len(sep) > len(aggMarkerPrefix) && sep[:len(aggMarkerPrefix)] == aggMarkerPrefix {
		return sep[len(aggMarkerPrefix):], true
	}
	return "", false
}
