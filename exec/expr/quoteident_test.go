package expr

import "testing"

// TestQuoteIdent compares QuoteIdent with PostgreSQL 15's quote_ident.
func TestQuoteIdent(t *testing.T) {
	for in, want := range map[string]string{
		"abc": "abc", "_x1": "_x1", "a$b": `"a$b"`, "Ab": `"Ab"`, "1x": `"1x"`, "": `""`, `a"b`: `"a""b"`,
		"é": `"é"`, "select": `"select"`, "int": `"int"`, "user": `"user"`, "xmltable": `"xmltable"`,
		"abort": "abort", "key": "key", "word": "word",
	} {
		if got := QuoteIdent(in); got != want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", in, got, want)
		}
	}
	if len(quotedKeywords) != 151 {
		t.Errorf("%d keywords, PostgreSQL 15 has 151 that are not unreserved", len(quotedKeywords))
	}
}
