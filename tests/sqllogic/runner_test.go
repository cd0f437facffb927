package sqllogic

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	rewrite   = flag.Bool("rewrite", false, "rewrite expected results in testdata/*.slt with the server's output")
	logErrors = flag.Bool("log-errors", false, "log every expected error (code and message) the server returned")
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) != "" {
		fakeServerMain() // this process is a stand-in server for TestServerLifecycle
		return
	}
	flag.Parse()
	// The tests marked t.Parallel (the differential tests against
	// PostgreSQL, each with its own streamdb and PostgreSQL) mostly wait
	// on their servers: three at a time keep two cores busy. -parallel on
	// the command line still decides.
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", "3")
	}
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// externalAddr is the server named by STREAMDB_TEST_ADDR (host:port or a
// URL), used instead of starting streamdb. Against it only files whose first
// line contains "# pg-compatible" run, unless STREAMDB_TEST_ALL is set; each
// file gets a fresh schema so files do not see each other's tables.
func externalAddr() string { return os.Getenv("STREAMDB_TEST_ADDR") }

// TestSQLLogic runs every testdata/*.slt file as a subtest, each against a
// fresh streamdb server (or against STREAMDB_TEST_ADDR).
func TestSQLLogic(t *testing.T) {
	files, err := filepath.Glob("testdata/*.slt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.slt files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if addr := externalAddr(); addr != "" {
				runExternal(t, addr, file)
				return
			}
			srv := StartServer(t, "")
			r := &Runner{
				Connect: func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, srv.ConnString()) },
				Restart: func(t testing.TB, crash bool) {
					if crash {
						srv.Kill9()
					}
					srv.Restart(t)
				},
				Rewrite:   *rewrite,
				LogErrors: *logErrors,
			}
			r.RunFile(t, file)
			srv.Stop()
		})
	}
}

func runExternal(t *testing.T, addr, file string) {
	compatible, err := pgCompatible(file)
	if err != nil {
		t.Fatal(err)
	}
	if !compatible && os.Getenv("STREAMDB_TEST_ALL") == "" {
		t.Skip("not marked # pg-compatible; STREAMDB_TEST_ADDR runs only those (set STREAMDB_TEST_ALL=1 for all)")
	}
	schema := "slt_" + regexp.MustCompile(`\W`).ReplaceAllString(strings.TrimSuffix(filepath.Base(file), ".slt"), "_")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setup, err := pgx.Connect(ctx, ConnString(addr))
	if err != nil {
		t.Fatal(err)
	}
	_, err = setup.Exec(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS %[1]s CASCADE; CREATE SCHEMA %[1]s", schema))
	setup.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			cfg, err := pgx.ParseConfig(ConnString(addr))
			if err != nil {
				return nil, err
			}
			cfg.RuntimeParams["search_path"] = schema
			return pgx.ConnectConfig(ctx, cfg)
		},
		Rewrite:   *rewrite,
		LogErrors: *logErrors,
	}
	r.RunFile(t, file)
}

// pgCompatible reports whether the file's first line marks it as valid
// PostgreSQL whose expected results come from PostgreSQL itself.
func pgCompatible(path string) (bool, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	first, _, _ := strings.Cut(string(src), "\n")
	return strings.Contains(first, "# pg-compatible"), nil
}

func TestParse(t *testing.T) {
	src := `# a comment

statement ok
CREATE TABLE t (a INT)

statement count 3
INSERT INTO t
VALUES (1), (2), (3)

statement error 42P01
SELECT * FROM nope

statement error relation "nope" does not exist
SELECT * FROM nope

statement error 42P01 relation .* does not exist
SELECT * FROM nope

statement error
SELECT

query IT rowsort colnames lbl
SELECT a, b FROM t
----
a b
1 x
2 NULL

query I nosort retry=2s
SELECT 1
----
1

query R valuesort retry
SELECT 1

query error 22012
SELECT 1/0

mode simple

restart

crash

halt
`
	f, err := Parse("x.slt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		kind     Kind
		line     int
		sql      string
		expErr   bool
		code     string
		re       string
		count    int64
		types    string
		sort     SortMode
		colnames bool
		retry    time.Duration
		label    string
		expected []string
		mode     string
	}
	wants := []want{
		{kind: KindStatement, line: 3, sql: "CREATE TABLE t (a INT)", count: -1},
		{kind: KindStatement, line: 6, sql: "INSERT INTO t\nVALUES (1), (2), (3)", count: 3},
		{kind: KindStatement, line: 10, sql: "SELECT * FROM nope", expErr: true, code: "42P01", count: -1},
		{kind: KindStatement, line: 13, sql: "SELECT * FROM nope", expErr: true, re: `relation "nope" does not exist`, count: -1},
		{kind: KindStatement, line: 16, sql: "SELECT * FROM nope", expErr: true, code: "42P01", re: `relation .* does not exist`, count: -1},
		{kind: KindStatement, line: 19, sql: "SELECT", expErr: true, count: -1},
		{kind: KindQuery, line: 22, sql: "SELECT a, b FROM t", count: -1, types: "IT", sort: RowSort, colnames: true, label: "lbl",
			expected: []string{"a b", "1 x", "2 NULL"}},
		{kind: KindQuery, line: 29, sql: "SELECT 1", count: -1, types: "I", retry: 2 * time.Second, expected: []string{"1"}},
		{kind: KindQuery, line: 34, sql: "SELECT 1", count: -1, types: "R", sort: ValueSort, retry: DefaultRetryTimeout},
		{kind: KindQuery, line: 37, sql: "SELECT 1/0", count: -1, expErr: true, code: "22012"},
		{kind: KindMode, line: 40, count: -1, mode: "simple"},
		{kind: KindRestart, line: 42, count: -1},
		{kind: KindCrash, line: 44, count: -1},
		{kind: KindHalt, line: 46, count: -1},
	}
	if len(f.Records) != len(wants) {
		t.Fatalf("got %d records, want %d", len(f.Records), len(wants))
	}
	for i, w := range wants {
		r := f.Records[i]
		re := ""
		if r.ErrRegexp != nil {
			re = r.ErrRegexp.String()
		}
		got := want{r.Kind, r.Line, r.SQL, r.ExpectError, r.ErrCode, re, r.Count, r.Types, r.Sort, r.ColNames, r.Retry, r.Label, r.Expected, r.Mode}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, err string }{
		{"frobnicate\nSELECT 1", `x.slt:1: unknown record type "frobnicate"`},
		{"statement\nSELECT 1", "x.slt:1: statement needs ok, count or error"},
		{"statement ok extra\nSELECT 1", "unexpected text after `statement ok`"},
		{"statement maybe\nSELECT 1", `unknown statement kind "maybe"`},
		{"statement count x\nSELECT 1", `bad row count "x"`},
		{"statement ok", "record has no SQL"},
		{"\n\nquery I\n----\n1", "x.slt:3: record has no SQL"},
		{"query X\nSELECT 1", `bad column type 'X'`},
		{"query I rowsort a b\nSELECT 1", `unknown query option "b"`},
		{"query I retry=soon\nSELECT 1", "bad retry duration"},
		{"statement error (\nSELECT 1", "bad error pattern"},
		{"mode fast", "want `mode simple` or `mode extended`"},
		{"halt now", `"halt" takes no arguments`},
	} {
		_, err := Parse("x.slt", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Parse(%q) error = %v, want %q", tc.src, err, tc.err)
		}
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{nil, "NULL"},
		{[]byte{}, "(empty)"},
		{[]byte("t"), "t"},
		{[]byte("2026-01-01 00:00:00"), "2026-01-01 00:00:00"},
		{[]byte("a b"), "a b"},
		{[]byte(" Hopper"), `" Hopper"`},
		{[]byte(" "), `" "`},
		{[]byte("a\nb\tc"), `"a\nb\tc"`},
		{[]byte(`"quoted"`), `"quoted"`},
	} {
		if got := FormatValue(tc.in); got != tc.want {
			t.Errorf("FormatValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRenderAndMatch(t *testing.T) {
	rows := [][]string{{"2", "b c"}, {"1", "NULL"}, {"10", "a"}}
	for _, tc := range []struct {
		name     string
		rec      Record
		rendered []string
		matching [][]string // expected blocks that match
		failing  [][]string // expected blocks that do not
	}{
		{
			name:     "nosort",
			rec:      Record{Sort: NoSort},
			rendered: []string{"2 b c", "1 NULL", "10 a"},
			matching: [][]string{{"2 b c", "1 NULL", "10 a"}, {"2 b c  ", "1 NULL", "10 a"}},
			failing:  [][]string{{"1 NULL", "2 b c", "10 a"}, {"2 b c", "1 NULL"}, {"2 b  c", "1 NULL", "10 a"}},
		},
		{
			name:     "rowsort",
			rec:      Record{Sort: RowSort},
			rendered: []string{"1 NULL", "10 a", "2 b c"},
			matching: [][]string{{"2 b c", "1 NULL", "10 a"}, {"10 a", "2 b c", "1 NULL"}},
			failing:  [][]string{{"2 b c", "1 NULL", "10 a", "10 a"}, {"1 (empty)", "10 a", "2 b c"}},
		},
		{
			name:     "valuesort",
			rec:      Record{Sort: ValueSort},
			rendered: []string{"1", "10", "2", "NULL", "a", "b c"},
			matching: [][]string{{"a", "b c", "NULL", "1", "2", "10"}},
			failing:  [][]string{{"1 NULL", "10 a", "2 b c"}},
		},
		{
			name:     "colnames",
			rec:      Record{Sort: RowSort, ColNames: true},
			rendered: []string{"k v", "1 NULL", "10 a", "2 b c"},
			matching: [][]string{{"k v", "2 b c", "1 NULL", "10 a"}},
			failing:  [][]string{{"v k", "2 b c", "1 NULL", "10 a"}, {"2 b c", "1 NULL", "10 a", "k v"}},
		},
		{
			name:     "hash",
			rec:      Record{Sort: RowSort},
			rendered: []string{"1 NULL", "10 a", "2 b c"},
			matching: [][]string{{hashLine(6, []string{"1 NULL", "10 a", "2 b c"})}},
			failing:  [][]string{{hashLine(6, []string{"2 b c", "1 NULL", "10 a"})}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Render(&tc.rec, []string{"k", "v"}, rows, false)
			if !slices.Equal(got, tc.rendered) {
				t.Errorf("Render = %q, want %q", got, tc.rendered)
			}
			for _, exp := range tc.matching {
				if !Matches(&tc.rec, exp, got) {
					t.Errorf("Matches(%q, %q) = false, want true", exp, got)
				}
			}
			for _, exp := range tc.failing {
				if Matches(&tc.rec, exp, got) {
					t.Errorf("Matches(%q, %q) = true, want false", exp, got)
				}
			}
		})
	}
}

func TestRenderHashesLargeResults(t *testing.T) {
	var rows [][]string
	for i := range HashThreshold/2 + 1 {
		rows = append(rows, []string{fmt.Sprint(i), "x"})
	}
	rec := &Record{Sort: RowSort}
	full := Render(rec, []string{"a", "b"}, rows, false)
	hashed := Render(rec, []string{"a", "b"}, rows, true)
	if len(hashed) != 1 || !strings.HasPrefix(hashed[0], fmt.Sprintf("%d values hashing to ", 2*len(rows))) {
		t.Fatalf("Render with hashing = %q", hashed)
	}
	if !Matches(rec, hashed, full) {
		t.Errorf("hash line %q does not match the full result", hashed[0])
	}
	small := Render(rec, []string{"a", "b"}, rows[:3], true)
	if len(small) != 3 {
		t.Errorf("small result was hashed: %q", small)
	}
}

func TestCheckTypes(t *testing.T) {
	cols := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		types string
		row   []string
		err   string
	}{
		{"ITRB", []string{"-12", "x y", "1.50", "t"}, ""},
		{"ITRB", []string{"NULL", "NULL", "NULL", "NULL"}, ""},
		{"ITRB", []string{"1", "x", "-1e+20", "f"}, ""},
		{"ITRB", []string{"1", "x", "NaN", "f"}, ""},
		{"ITRB", []string{"1", "x", "-Infinity", "f"}, ""},
		{"ITR", []string{"1", "x", "1", "f"}, `returned 4 columns ["a" "b" "c" "d"], type string "ITR" has 3`},
		{"ITRB", []string{"1.0", "x", "1", "f"}, `value "1.0" is not of type I`},
		{"ITRB", []string{"1", "x", "abc", "f"}, `value "abc" is not of type R`},
		{"ITRB", []string{"1", "x", "1", "true"}, `value "true" is not of type B`},
	} {
		err := checkTypes(tc.types, cols, [][]string{tc.row})
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("checkTypes(%q, %q) = %v, want %q", tc.types, tc.row, err, tc.err)
		}
	}
}

func TestRewrite(t *testing.T) {
	src := `# header comment

statement ok
CREATE TABLE t (a INT)

query I rowsort
SELECT a FROM t
----
1
2

# between records
query IT
SELECT 1, 'x'

statement error 42804
SELECT 'a' + 1

query error
SELECT 1/0

query I colnames
SELECT 3 AS three
----
three
4
`
	f, err := Parse("x.slt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	fr := &fileRun{f: f, rewrite: map[*Record][]string{}, codes: map[*Record]string{}}
	fr.rewrite[f.Records[1]] = []string{"1", "2", "3"}
	fr.rewrite[f.Records[2]] = []string{"1 x"}
	fr.codes[f.Records[3]] = "42883"
	fr.codes[f.Records[4]] = "22012"
	fr.rewrite[f.Records[5]] = []string{"three", "3"}
	want := `# header comment

statement ok
CREATE TABLE t (a INT)

query I rowsort
SELECT a FROM t
----
1
2
3

# between records
query IT
SELECT 1, 'x'
----
1 x

statement error 42883
SELECT 'a' + 1

query error 22012
SELECT 1/0

query I colnames
SELECT 3 AS three
----
three
3
`
	if got := fr.rewritten(); got != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	// An untouched file is reproduced exactly.
	fr = &fileRun{f: f}
	if got := fr.rewritten(); got != src {
		t.Errorf("rewritten without changes:\n%s\nwant:\n%s", got, src)
	}
	// The rewritten file parses to the same records with the new results.
	f2, err := Parse("x.slt", []byte(want))
	if err != nil {
		t.Fatal(err)
	}
	if len(f2.Records) != len(f.Records) || !slices.Equal(f2.Records[2].Expected, []string{"1 x"}) || f2.Records[4].ErrCode != "22012" {
		t.Errorf("re-parsed rewritten file: %d records, %q, %q", len(f2.Records), f2.Records[2].Expected, f2.Records[4].ErrCode)
	}
}

// TestRunnerRewriteRoundTrip runs a small file with wrong expectations
// through -rewrite against a live server, then runs the rewritten file
// normally. It needs STREAMDB_TEST_ADDR (the runner's own check; the .slt
// files cover the server).
func TestRunnerRewriteRoundTrip(t *testing.T) {
	addr := externalAddr()
	if addr == "" {
		t.Skip("STREAMDB_TEST_ADDR not set")
	}
	path := filepath.Join(t.TempDir(), "rt.slt")
	src := `statement ok
CREATE TEMPORARY TABLE rt (a INT, b TEXT)

statement count 3
INSERT INTO rt VALUES (2, 'two'), (1, ''), (3, NULL)

query IT rowsort
SELECT a, b FROM rt
----
9 wrong

query I colnames
SELECT count(*) AS n FROM rt

statement error 42804
SELECT 'a'::text + 1

mode simple

query T
SELECT 'simple'
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	connect := func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, ConnString(addr)) }
	t.Run("rewrite", func(t *testing.T) {
		(&Runner{Connect: connect, Rewrite: true}).RunFile(t, path)
	})
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("9 wrong", "1 (empty)\n2 two\n3 NULL",
		"AS n FROM rt\n", "AS n FROM rt\n----\nn\n3\n",
		"error 42804", "error 42883",
		"SELECT 'simple'\n", "SELECT 'simple'\n----\nsimple\n").Replace(src)
	if string(got) != want {
		t.Fatalf("rewritten file:\n%s\nwant:\n%s", got, want)
	}
	t.Run("check", func(t *testing.T) {
		(&Runner{Connect: connect}).RunFile(t, path)
	})
}
