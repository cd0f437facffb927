// Package lint holds tests of the code base itself: imports run one way
// (wire → sql → planner → exec → storage, checkpoint driving exec;
// connectors import neither the runtime nor one another; the operator
// contract exec/op, its kit exec/opkit and the operator families import
// no runtime; batch execution exec/batch and the streaming runtime exec
// import not each other but the plan nodes exec/plan), every
// package has a package comment, wire/ sees only the statement surface
// (sql/api), and docs/reference/settings.md lists
// every setting and flag the code registers; no type of package sql
// grows past its method ceiling, nor any type of the runtime exec past
// maxMethods (methods_test.go).
package lint

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/streamdb/streamdb/"

// forbidden lists, per package prefix, the packages it must not import.
var forbidden = map[string][]string{
	"storage": {"exec", "planner", "sql", "wire", "checkpoint", "monitor"},
	"types":   {"storage", "exec", "planner", "sql", "wire", "checkpoint", "monitor"},
	"sqlerr":  {"types", "storage", "exec", "planner", "sql", "wire", "checkpoint", "monitor"},
	"exec":    {"planner", "sql", "wire", "checkpoint", "monitor"},
	// connectors talk to external systems, not to the runtime (which
	// imports them); TestConnectorsStandAlone holds the rest of their rule.
	"connector":  {"storage", "exec", "planner", "sql", "wire", "checkpoint", "monitor"},
	"planner":    {"sql", "wire", "checkpoint", "monitor"},
	"checkpoint": {"planner", "sql", "wire", "monitor"},
	"sql":        {"wire", "monitor"},
	// cluster is etcd membership and the catalog log; cmd/streamdb joins it to sql.
	"cluster": {"storage", "exec", "planner", "sql", "wire", "checkpoint", "monitor"},
	// monitor sits beside wire: it reads sql and counts through wire's hook.
	"wire": {"monitor"},
}

func packages(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "bench" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eachImport calls fn with each import of each non-test file of the
// module's packages.
func eachImport(t *testing.T, fn func(pkg, file, path string)) {
	t.Helper()
	eachImportWithTests(t, func(pkg, f, p string) {
		if !strings.HasSuffix(f, "_test.go") {
			fn(pkg, f, p)
		}
	})
}

// eachImportWithTests is eachImport over every file, tests included.
func eachImportWithTests(t *testing.T, fn func(pkg, file, path string)) {
	t.Helper()
	fset := token.NewFileSet()
	for pkg, files := range packages(t) {
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				fn(pkg, f, strings.Trim(imp.Path.Value, `"`))
			}
		}
	}
}

func TestImportsRunOneWay(t *testing.T) {
	eachImport(t, func(pkg, f, p string) {
		if !strings.HasPrefix(p, module) {
			return
		}
		target := strings.Split(strings.TrimPrefix(p, module), "/")[0]
		for _, b := range forbidden[strings.Split(pkg, "/")[0]] {
			if target == b {
				t.Errorf("%s imports %s: imports must run wire → sql → planner → exec → storage", f, p)
			}
		}
	})
}

func TestPackageComments(t *testing.T) {
	fset := token.NewFileSet()
	for pkg, files := range packages(t) {
		documented, hasCode := false, false
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(f, "_test.go") {
				hasCode = true
			}
			if af.Doc != nil && strings.HasPrefix(af.Doc.Text(), "Package "+af.Name.Name) ||
				af.Doc != nil && strings.HasPrefix(af.Doc.Text(), "Command ") {
				documented = true
			}
		}
		if hasCode && !documented {
			t.Errorf("package %s has no package comment", pkg)
		}
	}
}

// connectorImports are the packages of this module a connector may
// import: its contract and storage-free helpers.
var connectorImports = map[string]bool{"connector": true, "types": true, "sqlerr": true}

// TestConnectorsStandAlone holds the connector seam: a connector package
// (connector/ and its subpackages, one per external system) imports from
// this module only the contract (connector), types and sqlerr, so no
// connector imports another nor the runtime; exec and sql import them.
func TestConnectorsStandAlone(t *testing.T) {
	eachImport(t, func(pkg, f, p string) {
		if pkg != "connector" && !strings.HasPrefix(pkg, "connector/") {
			return
		}
		if strings.HasPrefix(p, module) && !connectorImports[strings.TrimPrefix(p, module)] {
			t.Errorf("%s imports %s: a connector imports only connector, types and sqlerr from this module", f, p)
		}
	})
}

// frontEndImports are the packages of this module the wire protocol may
// import: the statement surface (sql/api), password verifiers
// (sql/scram), types and errors. The engine reaches wire/ only through
// wire.Engine, so the front end and its fuzz tests build without it.
var frontEndImports = map[string]bool{"sql/api": true, "sql/scram": true, "types": true, "sqlerr": true}

// TestFrontEndSeesOnlyTheStatementSurface holds the wire → sql seam, and
// keeps sql/api and sql/scram free of the engine.
func TestFrontEndSeesOnlyTheStatementSurface(t *testing.T) {
	eachImport(t, func(pkg, f, p string) {
		if !strings.HasPrefix(p, module) {
			return
		}
		target := strings.TrimPrefix(p, module)
		switch {
		case pkg == "wire" && !frontEndImports[target]:
			t.Errorf("%s imports %s: wire/ imports only sql/api, sql/scram, types and sqlerr from this module", f, p)
		case (pkg == "sql/api" || pkg == "sql/scram") && target != "types" && target != "sqlerr":
			t.Errorf("%s imports %s: the statement surface imports only types and sqlerr", f, p)
		}
	})
}

// TestOnlyStorageImportsPebble holds the storage seam: the engine is
// Pebble, and only storage/ names it; the rest use storage's types and
// DB's methods (storage/engine.go). Tests too: they reach the engine's
// test filesystems through storage.MemFS and storage/faultfs.
func TestOnlyStorageImportsPebble(t *testing.T) {
	eachImportWithTests(t, func(pkg, f, p string) {
		if pkg != "storage" && !strings.HasPrefix(pkg, "storage/") && strings.HasPrefix(p, "github.com/cockroachdb/pebble") {
			t.Errorf("%s imports %s: only storage/ imports the storage engine", f, p)
		}
	})
}

// opContractImports are the packages of this module the operator contract
// (exec/op) may import: it sits below the runtime and the operator
// families, beside expressions and storage.
var opContractImports = map[string]bool{"storage": true, "types": true, "exec/expr": true, "sqlerr": true}

// opKitImports are the packages of this module exec/opkit (what operators
// share beneath the contract) may import: the contract and what it may.
var opKitImports = map[string]bool{"exec/op": true, "storage": true, "types": true, "exec/expr": true, "sqlerr": true}

// familyImports are the packages of this module an operator family may
// import (besides its own subpackages): the contract, the kit, and
// expressions, storage's state API, types and errors. Everything else (the
// runtime, the planner, connectors, another family) is out of bounds.
var familyImports = map[string]bool{"exec/op": true, "exec/opkit": true, "exec/accum": true, "exec/over": true, "exec/expr": true, "storage": true, "types": true, "sqlerr": true}

// overImports are the packages of this module exec/over (the window
// function kernels, shared by the batch Window node and the rank family)
// may import: the accumulators, the kit, expressions, types and errors;
// not the contract's state API (storage), the runtime or a family.
var overImports = map[string]bool{"exec/accum": true, "exec/opkit": true, "exec/expr": true, "types": true, "sqlerr": true}

// accumImports are the packages of this module exec/accum (the
// accumulators and group table the grouping families share) may import:
// the kit and what it may.
var accumImports = map[string]bool{"exec/opkit": true, "exec/op": true, "storage": true, "types": true, "exec/expr": true, "sqlerr": true}

// operatorFamilies are the packages, one per operator family, that the
// runtime (exec) drives through exec/op. A family imports the contract
// (and exec/expr, storage, types), never the runtime, a connector or
// another family.
var operatorFamilies = []string{"exec/join", "exec/rank", "exec/session", "exec/temporal", "exec/versionjoin", "exec/hop", "exec/agg"}

// splitFamilies are the families already out of exec: each must stand as
// a package of its own, so a rename or a move back cannot drop it from
// the rule above unnoticed.
var splitFamilies = []string{"exec/join", "exec/rank", "exec/session", "exec/temporal", "exec/versionjoin", "exec/hop", "exec/agg"}

// TestOperatorContractStandsAlone holds the operator seam (exec/op's
// package comment): the contract imports from this module only storage,
// types, exec/expr and sqlerr; exec/opkit only those and the contract;
// exec/over (the window kernels) only the accumulators, the kit,
// exec/expr, types and sqlerr; an operator family only the contract, the
// kit, the kernels and what they import, so never exec (the runtime), a
// connector, the planner or another family.
func TestOperatorContractStandsAlone(t *testing.T) {
	for _, f := range append([]string{"exec/over"}, splitFamilies...) {
		if m, _ := filepath.Glob(filepath.Join("..", "..", f, "*.go")); len(m) == 0 {
			t.Errorf("operator family %s has no package: update splitFamilies and operatorFamilies with the move", f)
		}
	}
	family := func(pkg string) string {
		for _, f := range operatorFamilies {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				return f
			}
		}
		return ""
	}
	eachImport(t, func(pkg, f, p string) {
		if !strings.HasPrefix(p, module) {
			return
		}
		target := strings.TrimPrefix(p, module)
		if pkg == "exec/op" && !opContractImports[target] {
			t.Errorf("%s imports %s: exec/op imports only storage, types, exec/expr and sqlerr from this module", f, p)
		}
		if pkg == "exec/opkit" && !opKitImports[target] {
			t.Errorf("%s imports %s: exec/opkit imports only exec/op, exec/expr, storage, types and sqlerr from this module", f, p)
		}
		if pkg == "exec/accum" && !accumImports[target] {
			t.Errorf("%s imports %s: exec/accum imports only exec/opkit, exec/op, exec/expr, storage, types and sqlerr from this module", f, p)
		}
		if pkg == "exec/over" && !overImports[target] {
			t.Errorf("%s imports %s: exec/over imports only exec/accum, exec/opkit, exec/expr, types and sqlerr from this module", f, p)
		}
		fam := family(pkg)
		if fam == "" {
			return
		}
		switch tf := family(target); {
		case target == "exec":
			t.Errorf("%s imports %s: an operator family does not import the runtime", f, p)
		case target == "connector" || strings.HasPrefix(target, "connector/"):
			t.Errorf("%s imports %s: an operator family imports no connector", f, p)
		case tf != "" && tf != fam:
			t.Errorf("%s imports %s: an operator family imports no other family", f, p)
		case tf == "" && !familyImports[target]:
			t.Errorf("%s imports %s: an operator family imports only exec/op, exec/opkit, exec/accum, exec/over, exec/expr, storage, types and sqlerr from this module", f, p)
		}
	})
}

// batchImports are the packages of this module batch execution
// (exec/batch) may import: the plan nodes and what both runtimes read
// (exec/plan), the operator families whose kernels it runs over whole
// inputs, the kernels beneath them, connectors (bounded scans), storage,
// types and errors; never the streaming runtime (exec).
var batchImports = map[string]bool{"exec/plan": true, "exec/op": true, "exec/opkit": true, "exec/accum": true, "exec/over": true,
	"exec/expr": true, "connector": true, "storage": true, "types": true, "sqlerr": true}

// TestBatchApartFromRuntime holds the batch/runtime seam (exec/batch's
// package comment): exec/batch imports no streaming runtime (exec) and
// only batchImports and the operator families; the runtime (exec) does not
// import exec/batch; exec/plan, beneath both, imports neither; and no
// operator family, nor the contract, its kit or the kernels, imports batch
// execution or the plan nodes.
func TestBatchApartFromRuntime(t *testing.T) {
	for _, d := range []string{"exec/batch", "exec/plan"} {
		if m, _ := filepath.Glob(filepath.Join("..", "..", d, "*.go")); len(m) == 0 {
			t.Errorf("%s has no package: update TestBatchApartFromRuntime with the move", d)
		}
	}
	isFamily := func(pkg string) bool {
		for _, f := range append([]string{"exec/op", "exec/opkit", "exec/accum", "exec/over"}, operatorFamilies...) {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				return true
			}
		}
		return false
	}
	eachImport(t, func(pkg, f, p string) {
		if !strings.HasPrefix(p, module) {
			return
		}
		target := strings.TrimPrefix(p, module)
		switch {
		case pkg == "exec/batch" && target == "exec":
			t.Errorf("%s imports %s: batch execution does not import the streaming runtime", f, p)
		case pkg == "exec/batch" && !batchImports[target] && !isFamily(target) && !strings.HasPrefix(target, "connector/"):
			t.Errorf("%s imports %s: exec/batch imports only exec/plan, the operator families and kernels, connectors, storage, types and sqlerr", f, p)
		case pkg == "exec" && target == "exec/batch":
			t.Errorf("%s imports %s: the streaming runtime does not import batch execution", f, p)
		case pkg == "exec/plan" && (target == "exec" || target == "exec/batch"):
			t.Errorf("%s imports %s: exec/plan sits beneath both runtimes and imports neither", f, p)
		case isFamily(pkg) && (target == "exec/batch" || target == "exec/plan"):
			t.Errorf("%s imports %s: operators (their contract, kit, kernels and families) import no batch execution nor plan nodes", f, p)
		}
	})
}
