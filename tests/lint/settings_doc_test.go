package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// registeredKeys returns the string keys of the map literals assigned to
// the named package-level variables of a Go file.
func registeredKeys(t *testing.T, file string, vars ...string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", file), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, v := range vars {
		want[v] = true
	}
	out := map[string]string{}
	found := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !want[vs.Names[0].Name] {
			return true
		}
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			return true
		}
		found[vs.Names[0].Name] = true
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			if b, ok := kv.Key.(*ast.BasicLit); ok && b.Kind == token.STRING {
				k, _ := strconv.Unquote(b.Value)
				out[k] = vs.Names[0].Name
			}
		}
		return false
	})
	for _, v := range vars {
		if !found[v] {
			t.Fatalf("%s: no map literal %s (did the settings registry move?)", file, v)
		}
	}
	return out
}

// flagNames returns the names of the flags cmd/streamdb/main.go defines
// with flag.String, flag.Int, ..., and flag.Var.
func flagNames(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "cmd", "streamdb", "main.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || len(call.Args) < 2 {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "flag" {
			return true
		}
		arg := call.Args[0]
		if sel.Sel.Name == "Var" {
			arg = call.Args[1]
		}
		if b, ok := arg.(*ast.BasicLit); ok && b.Kind == token.STRING {
			name, _ := strconv.Unquote(b.Value)
			out = append(out, name)
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("cmd/streamdb/main.go: no flags found")
	}
	return out
}

// TestSettingsDocumented checks docs/reference/settings.md against the
// settings registry: every database, server, session setting, per-view
// option and command-line flag the code registers has a row, and every
// row of the database, session and server tables names a registered one.
func TestSettingsDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference", "settings.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	reg := registeredKeys(t, "sql/settings.go", "dbSettings", "serverSettings", "sessionDefaults")
	for k, v := range registeredKeys(t, "sql/statebackend.go", "jobOptionKeys") {
		if _, ok := reg[k]; !ok {
			reg[k] = v
		}
	}
	var missing []string
	for k, v := range reg {
		if !strings.Contains(doc, "| `"+k+"` |") {
			missing = append(missing, k+" ("+v+")")
		}
	}
	for _, f := range flagNames(t) {
		if !strings.Contains(doc, "`--"+f+"`") {
			missing = append(missing, "--"+f+" (cmd/streamdb flag)")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("docs/reference/settings.md has no row for %s", m)
	}

	// The other way: a row of these tables names a registered setting.
	checked := map[string]bool{"Database settings": true, "Session settings": true, "Server settings": true}
	row := regexp.MustCompile("^\\| `([a-z_.]+)` \\|")
	section := ""
	rows := 0
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil || !checked[section] {
			continue
		}
		rows++
		if _, ok := reg[m[1]]; !ok {
			t.Errorf("docs/reference/settings.md, %s: `%s` is not a setting the code registers", section, m[1])
		}
	}
	if rows < len(reg)/2 {
		t.Errorf("docs/reference/settings.md: only %d setting rows found under %v; did the tables' layout change?", rows, checked)
	}
}
