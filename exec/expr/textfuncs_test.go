package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// TestTextFuncs runs the Nexmark text kernels over the fixture batch
// (s: hello, World, NULL, ab%c, ”), column and constant arguments mixed.
func TestTextFuncs(t *testing.T) {
	S, A := types.TText, types.TTextArray
	groups := fn("regexp_match", A, col("s"), cs("(l+)(o)?"))
	tests := []struct {
		name string
		e    Expr
		want string
		err  string
	}{
		{"replace", fn("replace", S, col("s"), cs("l"), cs("L")), "heLLo,WorLd,NULL,ab%c,", ""},
		{"replace empty from", fn("replace", S, col("s"), cs(""), cs("x")), "hello,World,NULL,ab%c,", ""},
		{"replace longer", fn("replace", S, col("s"), cs("ll"), cs("[ll]")), "he[ll]o,World,NULL,ab%c,", ""},
		{"replace null arg", fn("replace", S, col("s"), cnull(S), cs("x")), "NULL,NULL,NULL,NULL,NULL", ""},
		{"split_part", fn("split_part", S, col("s"), cs("l"), ci(2)), ",d,NULL,,", ""},
		{"btrim set", fn("btrim", S, col("s"), cs("ho")), "ell,World,NULL,ab%c,", ""},
		{"ltrim set column", fn("ltrim", S, col("s"), col("pat")), "ello,World,NULL,,", ""},
		{"rtrim", fn("rtrim", S, col("s"), cs("dlo")), "he,Wor,NULL,ab%c,", ""},
		{"btrim null set", fn("btrim", S, col("s"), cnull(S)), "NULL,NULL,NULL,NULL,NULL", ""},
		{"split_part from end", fn("split_part", S, col("s"), cs("l"), ci(-1)), "o,d,NULL,ab%c,", ""},
		{"split_part past end", fn("split_part", S, col("s"), cs("l"), ci(-4)), ",,NULL,,", ""},
		{"split_part empty delim", fn("split_part", S, col("s"), cs(""), ci(1)), "hello,World,NULL,ab%c,", ""},
		{"split_part zero", fn("split_part", S, col("s"), cs("l"), col("a")), "", sqlerr.InvalidParameterValue},
		{"split_part null n", fn("split_part", S, col("s"), cs("l"), col("z")), "NULL,NULL,NULL,NULL,NULL", ""},
		{"to_char", fn("to_char", S, col("ts"), cs("YYYY-MM-DD HH24:MI:SS.US")),
			"2026-01-01 00:00:00.000000,2026-01-31 12:30:00.000000,NULL,1969-12-31 23:59:59.500000,2026-03-15 08:00:07.000000", ""},
		{"to_char names", fn("to_char", S, col("ts"), cs(`FMDay, DDth Mon YY HH12 a.m. "at" MS`)),
			"Thursday, 01st Jan 26 12 a.m. at 000,Saturday, 31st Jan 26 12 p.m. at 000,NULL,Wednesday, 31st Dec 69 11 p.m. at 500,Sunday, 15th Mar 26 08 a.m. at 000", ""},
		{"to_char template column", fn("to_char", S, col("ts"), col("s")), "hello,5orl7,NULL,ab%c,NULL", ""}, // W: week of month, d: day of week
		{"to_char empty", fn("to_char", S, col("ts"), cs("")), "NULL,NULL,NULL,NULL,NULL", ""},
		{"regexp_match groups", groups, "{ll,o},{l,NULL},NULL,NULL,NULL", ""},
		{"regexp_match whole", fn("regexp_match", A, col("s"), cs("O"), cs("i")), "{o},{o},NULL,NULL,NULL", ""},
		{"regexp_match pattern column", fn("regexp_match", A, col("s"), col("pat")), "NULL,NULL,NULL,{ab%c},NULL", ""},
		{"regexp_match bad", fn("regexp_match", A, col("s"), cs("(")), "", "2201B"},
		{"regexp_match backref", fn("regexp_match", A, col("s"), cs(`(l)\1`)), "", "2201B"},
		{"regexp_match global", fn("regexp_match", A, col("s"), cs("l"), cs("g")), "", sqlerr.InvalidParameterValue},
		{"regexp_match bad flag", fn("regexp_match", A, col("s"), cs("l"), cs("z")), "", sqlerr.InvalidParameterValue},
		{"subscript", fn("subscript", S, groups, ci(2)), "o,NULL,NULL,NULL,NULL", ""},
		{"subscript column", fn("subscript", S, groups, col("a")), "ll,NULL,NULL,NULL,NULL", ""},
		{"subscript const array", fn("subscript", S, fn("regexp_match", A, cs("x=1"), cs("(x)=(1)")), col("a")), "x,1,NULL,NULL,NULL", ""},
		{"regexp_replace", fn("regexp_replace", S, col("s"), cs("l"), cs("L"), cs("g")), "heLLo,WorLd,NULL,ab%c,", ""},
		{"regexp_replace first", fn("regexp_replace", S, col("s"), cs("(.)(l)"), cs(`\2\1[\&]\\`)), `hle[el]\lo,Wolr[rl]\d,NULL,ab%c,`, ""},
		{"single_value", fn("single_value", S, col("z"), col("s")), "hello,World,NULL,ab%c,", ""},
		{"single_value one", fn("single_value", types.TInt64, ci(1), col("a")), "1,2,NULL,-5,0", ""},
		{"single_value more", fn("single_value", S, col("a"), col("s")), "", sqlerr.CardinalityViolation},
		{"array_or_empty", fn("array_or_empty", A, groups), "{ll,o},{l,NULL},{},{},{}", ""},
		{"array_or_empty null", fn("array_or_empty", A, cnull(A)), "{},{},{},{},{}", ""},
		{"case text[]", &Case{T: A, Whens: []When{{col("p"), fn("regexp_match", A, col("s"), cs("o"))}}}, "{o},NULL,NULL,NULL,NULL", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := buildBatch(t, mem)
			defer b.Release()
			got, err := Eval(&Ctx{Mem: mem}, tc.e, b)
			if tc.err != "" {
				if err == nil {
					defer got.Release()
					t.Fatalf("%s: want error %s, got %s", tc.e, tc.err, render(got, tc.e.Type()))
				}
				if code := sqlerr.Code(err); code != tc.err {
					t.Fatalf("%s: want SQLSTATE %s, got %s (%v)", tc.e, tc.err, code, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.e, err)
			}
			defer got.Release()
			if got.Len() != 5 || !arrow.TypeEqual(got.DataType(), tc.e.Type().Arrow()) {
				t.Fatalf("%s: got %d rows of %s", tc.e, got.Len(), got.DataType())
			}
			if s := render(got, tc.e.Type()); s != tc.want {
				t.Errorf("%s:\n got %s\nwant %s", tc.e, s, tc.want)
			}
		})
	}
}

func TestTextFuncsConst(t *testing.T) {
	A := types.TTextArray
	m := fn("regexp_match", A, cs(`a "b",c`), cs(`(a) (.*),(x)?`))
	for _, tc := range []struct {
		e    Expr
		want string
	}{
		{m, `{a,"\"b\"",NULL}`},
		{fn("subscript", types.TText, m, ci(2)), `"b"`},
		{fn("subscript", types.TText, m, ci(3)), "NULL"},
		{fn("subscript", types.TText, m, cnull(types.TInt64)), "NULL"},
		{fn("split_part", types.TText, cs("a/b/c"), cs("/"), ci(-2)), "b"},
	} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		d, err := EvalConst(&Ctx{Mem: mem}, tc.e)
		if err != nil {
			t.Fatalf("%s: %v", tc.e, err)
		}
		if got := renderDatum(d, tc.e.Type()); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.e, got, tc.want)
		}
		mem.AssertSize(t, 0)
	}
}

func TestHasLazyQuantifier(t *testing.T) {
	for p, want := range map[string]bool{
		"a.*?c": true, "a+?": true, "a??": true, "a{1,2}?": true,
		"a.*c": false, "(?:a)": false, "(?i)a": false, `a\*?`: false, "[*?]": false,
	} {
		if got := hasLazyQuantifier(p); got != want {
			t.Errorf("hasLazyQuantifier(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestRegexRequiredLiteral checks the literal prefilter of the regexp
// functions: the literal found is the one expected, and a string that
// lacks it never matches (against Go's regexp on the same pattern, over
// patterns with groups, alternations, repetitions and case folding).
func TestRegexRequiredLiteral(t *testing.T) {
	needs := map[string]string{
		`(&|^)channel_id=([^&]*)`: "channel_id=",
		`abc`:                     "abc",
		`a(bc)+d`:                 "bc",
		`x(yz){2,3}`:              "yz", // each copy is its own group
		`(ab)*c`:                  "c",
		`ab|cd`:                   "",
		`(?i)abc`:                 "",
		`a.b`:                     "a",
		`(foo)?bar`:               "bar",
		`[a-z]+`:                  "",
		`^https://www\.x\.com/`:   "https://www.x.com/",
	}
	for pat, want := range needs {
		_, o, err := compileRegex("regexp_match", pat, "")
		if err != nil {
			t.Fatal(err)
		}
		if o.need != want {
			t.Errorf("%q: need %q, want %q", pat, o.need, want)
		}
	}
	inputs := []string{"", "abc", "ABC", "xabcdx", "abcbcd", "xyzyz", "xyzyzyz", "ccc", "a\nb", "foobar", "bar",
		"https://www.x.com/a?channel_id=7", "&channel_id=", "channel_id", "https://www.x.com/a/b", "\xffabc", "ab\xff"}
	for pat := range needs {
		for _, flags := range []string{"", "i", "n", "q"} {
			re, o, err := compileRegex("regexp_match", pat, flags)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range inputs {
				if o.matchesNone(in) && re.MatchString(in) {
					t.Errorf("%q flags %q: %q matches but lacks %q", pat, flags, in, o.need)
				}
			}
		}
	}
}
