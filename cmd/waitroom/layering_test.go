package main

// The layering of the module's packages, checked: which package may import
// which of ours. docs/ARCHITECTURE.md explains the rules; this test holds
// the code to them, so that a change that breaks one fails here rather than
// in a reviewer's head.

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// layer is the rule for the packages under one path prefix (module-relative:
// "policy" covers policy and policy/sim unless a longer prefix has its own
// rule). may lists the packages of ours they may import, as Go's package
// patterns spell them: "edge" is that package alone, "edge/..." it and
// every package under it.
type layer struct {
	prefix string
	may    []string
}

// layers is the layering of the module. Standard-library and third-party
// imports are not restricted here (go.mod and review keep those in check).
var layers = []layer{
	// The replicated data types and the visitor's token: pure, the base that
	// everything else stands on.
	{prefix: "crdt"},
	{prefix: "cookie"},
	// Admission maths over a crdt snapshot; the simulator drives it.
	{prefix: "policy", may: []string{"crdt"}},
	{prefix: "policy/sim", may: []string{"crdt", "policy/..."}},
	// The simulator's plots: the plotting library is linked only where
	// they are drawn, never into the node.
	{prefix: "policy/sim/plot", may: []string{"policy/sim"}},
	// The one grammar of a length of time in the files people write (a
	// node's configuration, the simulator's scenarios).
	{prefix: "policy/duration"},
	// The judge of a run, shared by the simulator and the real-process
	// fidelity run: definitions only, nothing of how the room decides.
	{prefix: "policy/truth"},
	// Keeping the replicas of the crdt state in step.
	{prefix: "gossip", may: []string{"crdt"}},
	// The test support every package's tests share (poll, fake clock).
	{prefix: "gossip/testkit"},
	// The node: the request path, the rooms and their allocation loop. It
	// wires the pure core and gossip together, with the pieces under it
	// that know nothing of a node (the configuration, the canonical
	// spelling, the page's languages, the challenge's verifier, what it
	// remembers of its visitors, the access log's writer, the reading of
	// a client's address, the queue page's rendering, the room registers'
	// bytes). What runs
	// beside it (the admin API, the agent, webhook delivery) uses it
	// through its exported methods, and it imports none of them.
	{prefix: "edge", may: []string{"cookie", "crdt", "gossip", "policy", "edge/config", "edge/canon", "edge/i18n", "edge/challenge", "edge/visitors", "edge/accesslog", "edge/clientaddr", "edge/queuepage", "edge/roomreg"}},
	// The configuration is data and pure checks: the edge compiles it into
	// rooms, and the commands read and write it without a node. Its routes
	// are checked in the canonical spelling the router matches requests
	// in, which imports nothing of ours, its durations are written in the
	// grammar the simulator's scenarios share, and a room's defaults that
	// the admission maths fall back on (session_duration) are the
	// policy's, which is pure.
	{prefix: "edge/config", may: []string{"edge/canon", "policy/..."}},
	{prefix: "edge/canon"},
	// The built-in page's text in each language.
	{prefix: "edge/i18n"},
	// The access log's lines and its writer: the node hands it entries.
	{prefix: "edge/accesslog"},
	// The visitor's address read from a request and the trusted proxies'
	// X-Forwarded-For: pure, a request's fields in, an address out.
	{prefix: "edge/clientaddr"},
	// What a node remembers of its visitors between requests (the state each
	// token was last counted in, the revoked sessions): tables over the
	// cookie's token and the counter rule's state, knowing nothing of a node.
	{prefix: "edge/visitors", may: []string{"cookie", "crdt", "policy"}},
	// The queue page rendered from its variables (the built-in page in
	// every language, a room's template, the cache, the status page): the
	// room's language setting is the configuration's, the text i18n's.
	{prefix: "edge/queuepage", may: []string{"edge/config", "edge/i18n"}},
	// A room's settings as a replicated register's bytes: the register's
	// name, its value in the configuration's schema, its secrets.
	{prefix: "edge/roomreg", may: []string{"crdt", "edge/config"}},
	// The bot challenge's verifier: a room's settings in, a verdict out.
	{prefix: "edge/challenge", may: []string{"edge/config"}},
	// The console's page and event stream: the admin API hands it frames.
	{prefix: "edge/dashboard"},
	// The admin API's wire types and its client: what a program that
	// speaks to a node links, so never the node (edge) nor its admin API.
	// The figures it carries are gossip's and the policy's own types, and
	// rooms are written in the configuration's schema.
	{prefix: "edge/api", may: []string{"edge/config", "gossip", "policy/..."}},
	// The admin API: the node's documents, rooms, codes and webhooks over
	// HTTP, the console and the guard in front of them, through the
	// node's exported methods.
	{prefix: "edge/admin", may: []string{"cookie", "crdt", "gossip", "edge", "edge/api", "edge/config", "edge/canon", "edge/dashboard", "edge/webhook/deliver"}},
	// Signing a webhook's notice, and what a receiver decodes: what a
	// receiver written in Go imports, so nothing of ours.
	{prefix: "edge/webhook"},
	// Which changes become notices, who sends each, and the deliveries.
	{prefix: "edge/webhook/deliver", may: []string{"gossip", "edge", "edge/api", "edge/config", "edge/webhook"}},
	// A node's files, written whole or not at all and sealed: it knows
	// nothing of what they hold.
	{prefix: "edge/datadir"},
	// What runs a node as a process: keys, gossip security, listeners,
	// TLS, readiness, the data directory, and the node, its admin API and
	// its webhooks wired together.
	{prefix: "edge/agent", may: []string{"cookie", "gossip", "edge", "edge/admin", "edge/api", "edge/config", "edge/datadir", "edge/webhook/deliver"}},
	// The one harness of nodes in one process (the test origin, a node, the
	// in-process cluster, a visitor): it starts nodes as serve does, so it
	// may import the edge's packages and what they wire.
	{prefix: "edge/edgetest", may: []string{"cookie", "crdt", "gossip/...", "policy/...", "edge/..."}},
	// The visitor's side of a room (the one parser of the Refresh header, a
	// cookie-keeping visitor): the edge's tests read answers with it, and
	// the tools drive rooms with it, so it imports nothing of ours.
	{prefix: "edge/crowd"},
	// The real-browser tests: their package holds tests only.
	{prefix: "edge/browsertest"},
	// Commands only wire flags to the packages that do the work. The
	// operators' commands speak to a node through the admin API's client
	// (edge/api) and run one through the agent; the node's own package is
	// no import of theirs. The tools that are not the node live under
	// cmd/waitroom/internal, private to the command.
	{prefix: "cmd", may: []string{"cookie", "policy/...", "edge/agent", "edge/api", "edge/config", "cmd/waitroom/internal/..."}},
	// The load generator speaks HTTP to any site, waitroom or not, and
	// reads the answers as a visitor does.
	{prefix: "cmd/waitroom/internal/loadtest", may: []string{"edge/crowd"}},
	// The bench starts a node (with the harness) and drives it, and the
	// proxies it is compared with (on ports found as the tests find
	// theirs), with the load generator.
	{prefix: "cmd/waitroom/internal/bench", may: []string{"cookie", "edge/...", "gossip/testkit", "cmd/waitroom/internal/loadtest"}},
	// The demo starts a ring (with the harness) and a crowd in front of it.
	{prefix: "cmd/waitroom/internal/demo", may: []string{"edge/..."}},
	// The fidelity run judges real serve processes from the outside, as a
	// visitor and an origin see them: it drives them over HTTP and signals
	// behind the one test origin, and of the room's own code imports only
	// the judge, which knows nothing of how the room decides.
	{prefix: "cmd/waitroom/internal/fidelity", may: []string{"edge/crowd", "edge/edgetest", "gossip/testkit", "policy/truth"}},
	// The state document laid out for a person, as `waitroom state` prints
	// it: it reads the admin API's wire types and knows no node.
	{prefix: "cmd/waitroom/internal/statetable", may: []string{"edge/api"}},
	// What a binary knows of its own build: the standard library's.
	{prefix: "cmd/waitroom/internal/buildinfo"},
}

// exception is an import that breaks the layering today and is being
// removed. The test fails when it is no longer made, so that the exception
// goes with it.
type exception struct {
	from, to string // module-relative package paths
	why      string
}

// exceptions is empty: every package keeps the rules. The mechanism stays
// for the next move that has to be made in steps.
var exceptions []exception

// Test files (_test.go) have a looser rule: they may import any package of
// ours but a command (a command's internal packages are libraries, and
// their tests import them), since a test may use another package's harness
// or check two packages together. crdt's and cookie's tests still import only
// their own package: the pure core is tested on its own.
var selfTested = []string{"crdt", "cookie"}

// pkgImports is what the files of one package import from the module:
// imported package → the files (module-relative) that import it.
type pkgImports struct {
	code  map[string][]string // non-test files
	tests map[string][]string // _test.go files
}

func TestTheModuleKeepsItsLayering(t *testing.T) {
	root, module := moduleRoot(t)
	pkgs, err := scanModule(os.DirFS(root), module)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatalf("no packages found under %s", root)
	}
	for _, p := range checkLayering(pkgs, layers, exceptions) {
		t.Error(p)
	}
}

func TestTheLayeringCheck(t *testing.T) {
	const module = "example.com/m"
	file := func(imports ...string) *fstest.MapFile {
		var b strings.Builder
		b.WriteString("package p\n\nimport (\n")
		for _, imp := range imports {
			fmt.Fprintf(&b, "\t%q\n", imp)
		}
		b.WriteString(")\n")
		return &fstest.MapFile{Data: []byte(b.String())}
	}
	rules := []layer{
		{prefix: "crdt"},
		{prefix: "policy", may: []string{"crdt"}},
		{prefix: "gossip", may: []string{"crdt"}},
		{prefix: "edge", may: []string{"crdt", "gossip", "policy", "edge/config"}},
		{prefix: "edge/load"},
		{prefix: "edge/admin", may: []string{"edge", "edge/config"}},
		{prefix: "edge/tools", may: []string{"edge/..."}},
	}
	clean := fstest.MapFS{
		"go.mod":                 {Data: []byte("// a comment first\nmodule " + module + " // and after\n\ngo 1.26\n")},
		"crdt/state.go":          file("fmt"),
		"policy/allocate.go":     file(module+"/crdt", "math"),
		"gossip/node.go":         file(module + "/crdt"),
		"edge/server.go":         file(module+"/crdt", module+"/gossip", module+"/policy"),
		"edge/config/config.go":  file(module + "/crdt"),
		"edge/load/load.go":      file("net/http"),
		"edge/testdata/bad.go":   file(module + "/edge"),
		"crdt/testdata/fuzz.txt": {Data: []byte("not go")},
	}
	with := func(extra map[string]*fstest.MapFile) fstest.MapFS {
		fsys := fstest.MapFS{}
		for k, v := range clean {
			fsys[k] = v
		}
		for k, v := range extra {
			fsys[k] = v
		}
		return fsys
	}
	tests := []struct {
		name       string
		fsys       fstest.MapFS
		exceptions []exception
		want       []string // substrings of the problems, one each, in order
	}{
		{name: "a tree that keeps the rules passes", fsys: clean},
		{name: "policy importing gossip is reported with the file",
			fsys: with(map[string]*fstest.MapFile{"policy/decide.go": file(module + "/gossip")}),
			want: []string{"policy/decide.go imports gossip: policy may import only crdt"}},
		{name: "crdt importing anything of ours is reported",
			fsys: with(map[string]*fstest.MapFile{"crdt/x.go": file(module + "/policy")}),
			want: []string{"crdt/x.go imports policy: crdt may import nothing of ours"}},
		{name: "a sub-package follows the longest prefix with a rule",
			fsys: with(map[string]*fstest.MapFile{"edge/load/env.go": file(module + "/edge")}),
			want: []string{"edge/load/env.go imports edge: edge/load may import nothing of ours"}},
		{name: "a package split out of edge may import edge",
			fsys: with(map[string]*fstest.MapFile{"edge/admin/admin.go": file(module+"/edge", module+"/edge/config")})},
		{name: "edge importing what was split out of it is reported",
			fsys: with(map[string]*fstest.MapFile{"edge/routes.go": file(module + "/edge/admin"), "edge/admin/admin.go": file(module + "/edge")}),
			want: []string{"edge/routes.go imports edge/admin: edge may import only crdt, gossip, policy, edge/config"}},
		{name: "a pattern with /... covers the packages under it",
			fsys: with(map[string]*fstest.MapFile{"edge/tools/t.go": file(module+"/edge", module+"/edge/load", module+"/edge/config")})},
		{name: "a pattern without /... covers its package alone",
			fsys: with(map[string]*fstest.MapFile{"edge/admin/admin.go": file(module + "/edge/load")}),
			want: []string{"edge/admin/admin.go imports edge/load: edge/admin may import only edge, edge/config"}},
		{name: "a package without a rule is reported",
			fsys: with(map[string]*fstest.MapFile{"tools/x.go": file("fmt")}),
			want: []string{"package tools has no layering rule"}},
		{name: "a test file may import what its package may not",
			fsys: with(map[string]*fstest.MapFile{"policy/allocate_test.go": file(module+"/gossip", module+"/edge")})},
		{name: "a test file may not import a command",
			fsys: with(map[string]*fstest.MapFile{"cmd/tool/main.go": file("fmt"), "policy/x_test.go": file(module + "/cmd/tool")}),
			want: []string{"package cmd/tool has no layering rule", "policy/x_test.go imports cmd/tool: tests may import any package of ours but a command"}},
		{name: "a command's tests may import the command's internal packages",
			fsys: with(map[string]*fstest.MapFile{"cmd/tool/main.go": file("fmt"), "cmd/tool/internal/x/x.go": file("fmt"), "cmd/tool/internal/x/x_test.go": file(module + "/cmd/tool/internal/x")}),
			want: []string{"package cmd/tool has no layering rule", "package cmd/tool/internal/x has no layering rule"}},
		{name: "crdt's tests import only crdt",
			fsys: with(map[string]*fstest.MapFile{"crdt/state_test.go": file(module+"/crdt", module+"/policy")}),
			want: []string{"crdt/state_test.go imports policy: crdt's tests may import only crdt"}},
		{name: "an exception in use lets its import through",
			fsys:       with(map[string]*fstest.MapFile{"policy/x.go": file(module + "/gossip")}),
			exceptions: []exception{{from: "policy", to: "gossip", why: "being removed"}}},
		{name: "an exception no longer used is reported, to be dropped",
			fsys:       clean,
			exceptions: []exception{{from: "policy", to: "gossip", why: "being removed"}},
			want:       []string{"policy no longer imports gossip: drop the exception"}},
		{name: "an exception covers only its own package",
			fsys:       with(map[string]*fstest.MapFile{"policy/x.go": file(module + "/gossip"), "policy/sub/y.go": file(module + "/gossip")}),
			exceptions: []exception{{from: "policy", to: "gossip", why: "being removed"}},
			want:       []string{"policy/sub/y.go imports gossip"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mod, err := modulePath(tc.fsys)
			if err != nil || mod != module {
				t.Fatalf("module path %q, %v; want %q", mod, err, module)
			}
			pkgs, err := scanModule(tc.fsys, mod)
			if err != nil {
				t.Fatal(err)
			}
			got := checkLayering(pkgs, rules, tc.exceptions)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d is %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

// moduleRoot finds go.mod above the test's directory and reads the module
// path from it.
func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	module, err = modulePath(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	return dir, module
}

// modulePath reads the module directive of fsys's go.mod.
func modulePath(fsys fs.FS) (string, error) {
	f, err := fsys.Open("go.mod")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		rest, _, _ = strings.Cut(rest, "//")
		if rest = strings.TrimSpace(rest); strings.HasPrefix(rest, `"`) {
			return strconv.Unquote(rest)
		}
		return rest, nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("go.mod: no module directive")
}

// scanModule reads the imports of every .go file of the module in fsys
// (testdata and hidden directories skipped, as the go tool does) and keeps
// those of the module's own packages, by module-relative path.
func scanModule(fsys fs.FS, module string) (map[string]*pkgImports, error) {
	pkgs := map[string]*pkgImports{}
	fset := token.NewFileSet()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := path.Dir(p)
		pi := pkgs[pkg]
		if pi == nil {
			pi = &pkgImports{code: map[string][]string{}, tests: map[string][]string{}}
			pkgs[pkg] = pi
		}
		into := pi.code
		if strings.HasSuffix(name, "_test.go") {
			into = pi.tests
		}
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if rel, ok := strings.CutPrefix(ip, module+"/"); ok {
				into[rel] = append(into[rel], p)
			}
		}
		return nil
	})
	return pkgs, err
}

// under reports whether package pkg is prefix or inside it.
func under(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// allows reports whether pattern, as a may entry spells it, covers package
// pkg: "edge" only edge itself, "edge/..." edge and every package under it.
func allows(pattern, pkg string) bool {
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return under(pkg, tree)
	}
	return pkg == pattern
}

// ruleFor is the layer with the longest prefix that covers pkg.
func ruleFor(pkg string, rules []layer) (layer, bool) {
	var best layer
	found := false
	for _, l := range rules {
		if under(pkg, l.prefix) && (!found || len(l.prefix) > len(best.prefix)) {
			best, found = l, true
		}
	}
	return best, found
}

// isCommand reports whether pkg is a command or a package under one
// outside its internal tree: what no test may import. A command's internal
// packages are that command's libraries (Go lets only the command's own
// tree import them), tested as any library is.
func isCommand(pkg string) bool {
	return under(pkg, "cmd") && !strings.Contains("/"+pkg+"/", "/internal/")
}

// checkLayering returns one line per broken rule, sorted by package.
func checkLayering(pkgs map[string]*pkgImports, rules []layer, excs []exception) []string {
	var problems []string
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	slices.Sort(names)
	excepted := func(from, to string) bool {
		return slices.ContainsFunc(excs, func(e exception) bool { return e.from == from && e.to == to })
	}
	for _, pkg := range names {
		pi := pkgs[pkg]
		rule, ok := ruleFor(pkg, rules)
		if !ok {
			problems = append(problems, fmt.Sprintf("package %s has no layering rule: add one to layers here and to docs/ARCHITECTURE.md", pkg))
		}
		for _, imp := range sortedKeys(pi.code) {
			if !ok || excepted(pkg, imp) || slices.ContainsFunc(rule.may, func(m string) bool { return allows(m, imp) }) {
				continue
			}
			allowed := "nothing of ours"
			if len(rule.may) > 0 {
				allowed = "only " + strings.Join(rule.may, ", ")
			}
			problems = append(problems, fmt.Sprintf("%s imports %s: %s may import %s", pi.code[imp][0], imp, rule.prefix, allowed))
		}
		for _, imp := range sortedKeys(pi.tests) {
			switch self := slices.IndexFunc(selfTested, func(s string) bool { return under(pkg, s) }); {
			case self >= 0 && imp != pkg:
				problems = append(problems, fmt.Sprintf("%s imports %s: %s's tests may import only %s", pi.tests[imp][0], imp, selfTested[self], pkg))
			case isCommand(imp):
				problems = append(problems, fmt.Sprintf("%s imports %s: tests may import any package of ours but a command", pi.tests[imp][0], imp))
			}
		}
	}
	for _, e := range excs {
		if pi := pkgs[e.from]; pi == nil || pi.code[e.to] == nil {
			problems = append(problems, fmt.Sprintf("%s no longer imports %s: drop the exception (%s)", e.from, e.to, e.why))
		}
	}
	return problems
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
