package sql

import (
	"reflect"
	"testing"
)

// TestSplitText checks COPY's text format: fields split on the delimiter,
// backslash escapes (an escaped delimiter is data), and \N for NULL.
func TestSplitText(t *testing.T) {
	c := &copyIn{opts: copyOpts{delim: '\t', null: `\N`}}
	for _, tc := range []struct {
		line string
		want []any // string, or nil for NULL
	}{
		{"a\tb\tc", []any{"a", "b", "c"}},
		{"a\\\tb\tc", []any{"a\tb", "c"}},
		{`\N` + "\t" + `x\\y` + "\t", []any{nil, `x\y`, ""}},
		{`back\\` + "\t" + `\n\t\x41\101`, []any{`back\`, "\n\tAA"}},
		{`\\N`, []any{`\N`}},
	} {
		if err := c.splitText([]byte(tc.line)); err != nil {
			t.Fatal(err)
		}
		var got []any
		for _, f := range c.fields {
			if f == nil {
				got = append(got, nil)
			} else {
				got = append(got, string(f))
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.line, got, tc.want)
		}
	}
}
