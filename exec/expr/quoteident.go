package expr

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamdb/streamdb/types"
)

// QuoteIdent is PostgreSQL's quote_ident (quote_identifier): s as is when
// it is lower-case ASCII letters, digits and underscores, not starting
// with a digit, and not a keyword that needs quoting; otherwise in double
// quotes, with quotes doubled.
func QuoteIdent(s string) string {
	if !needsQuote(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func needsQuote(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] == '_') {
		return true
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return true
		}
	}
	return quotedKeywords[s]
}

// quotedKeywords are PostgreSQL 15's keywords that are not unreserved
// (reserved, type or function name, column name): SELECT word FROM
// pg_get_keywords() WHERE catcode <> 'U'. An identifier spelled as one
// must be quoted.
var quotedKeywords = map[string]bool{
	"all": true, "analyse": true, "analyze": true, "and": true, "any": true, "array": true,
	"as": true, "asc": true, "asymmetric": true, "authorization": true, "between": true,
	"bigint": true, "binary": true, "bit": true, "boolean": true, "both": true, "case": true,
	"cast": true, "char": true, "character": true, "check": true, "coalesce": true, "collate": true,
	"collation": true, "column": true, "concurrently": true, "constraint": true, "create": true,
	"cross": true, "current_catalog": true, "current_date": true, "current_role": true,
	"current_schema": true, "current_time": true, "current_timestamp": true, "current_user": true,
	"dec": true, "decimal": true, "default": true, "deferrable": true, "desc": true, "distinct": true,
	"do": true, "else": true, "end": true, "except": true, "exists": true, "extract": true,
	"false": true, "fetch": true, "float": true, "for": true, "foreign": true, "freeze": true,
	"from": true, "full": true, "grant": true, "greatest": true, "group": true, "grouping": true,
	"having": true, "ilike": true, "in": true, "initially": true, "inner": true, "inout": true,
	"int": true, "integer": true, "intersect": true, "interval": true, "into": true, "is": true,
	"isnull": true, "join": true, "lateral": true, "leading": true, "least": true, "left": true,
	"like": true, "limit": true, "localtime": true, "localtimestamp": true, "national": true,
	"natural": true, "nchar": true, "none": true, "normalize": true, "not": true, "notnull": true,
	"null": true, "nullif": true, "numeric": true, "offset": true, "on": true, "only": true,
	"or": true, "order": true, "out": true, "outer": true, "overlaps": true, "overlay": true,
	"placing": true, "position": true, "precision": true, "primary": true, "real": true,
	"references": true, "returning": true, "right": true, "row": true, "select": true,
	"session_user": true, "setof": true, "similar": true, "smallint": true, "some": true,
	"substring": true, "symmetric": true, "table": true, "tablesample": true, "then": true,
	"time": true, "timestamp": true, "to": true, "trailing": true, "treat": true, "trim": true,
	"true": true, "union": true, "unique": true, "user": true, "using": true, "values": true,
	"varchar": true, "variadic": true, "verbose": true, "when": true, "where": true, "window": true,
	"with": true, "xmlattributes": true, "xmlconcat": true, "xmlelement": true, "xmlexists": true,
	"xmlforest": true, "xmlnamespaces": true, "xmlparse": true, "xmlpi": true, "xmlroot": true,
	"xmlserialize": true, "xmltable": true,
}

// quoteIdentKernel is quote_ident over a Text column.
func quoteIdentKernel(c *Ctx, args []vec, n int) (vec, error) {
	b := array.NewStringBuilder(c.mem())
	defer b.Release()
	for i := 0; i < n; i++ {
		d := datumOf(args[0], i)
		if d.Null {
			b.AppendNull()
			continue
		}
		b.Append(QuoteIdent(d.S))
	}
	return vec{arr: b.NewArray(), t: types.TText}, nil
}
