package parse

// PostgreSQL's statistical and boolean aggregates (stddev, variance and
// their _samp/_pop forms, bool_and, bool_or, every, corr, covar_*,
// regr_*), which TiDB's grammar does not parse as aggregates or parses
// with MySQL's meaning (stddev is MySQL's population form). Each call is
// written as group_concat with a marker separator naming it
// (AggFromMarker), as the collecting aggregates with DISTINCT or ORDER BY
// inside are (sortedagg.go), and the binder reads it back
// (sql/bind aggs_pg.go). FILTER (WHERE ...) wraps the call as
// pg_agg_filter(cond, call) (filterCall).

// pgAggs are the aggregates written as group_concat with a marker.
var pgAggs = map[string]bool{
	"stddev": true, "stddev_samp": true, "stddev_pop": true,
	"variance": true, "var_samp": true, "var_pop": true,
	"bool_and": true, "bool_or": true, "every": true,
	"bit_and": true, "bit_or": true, "bit_xor": true,
	"corr": true, "covar_pop": true, "covar_samp": true,
	"regr_slope": true, "regr_intercept": true, "regr_count": true, "regr_r2": true,
	"regr_avgx": true, "regr_avgy": true, "regr_sxx": true, "regr_syy": true, "regr_sxy": true,
}

// pgAggStart returns the aggregate starting at toks[i] if it is one of
// pgAggs called (not a qualified name), else "".
func pgAggStart(toks []token, i, to int) string {
	t := toks[i]
	if t.Kind != tIdent || !pgAggs[t.Val] || i+1 >= to || !toks[i+1].isOp("(") || i > 0 && toks[i-1].isOp(".") {
		return ""
	}
	return t.Val
}

// IsPGAgg reports whether name is one of the aggregates written with a
// marker here, which the binder reads back.
func IsPGAgg(name string) bool { return pgAggs[name] }
