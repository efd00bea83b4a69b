package config

// Reading a configuration: the file, strict YAML (or JSON) decoding, and
// the decoder's errors rewritten to name the key by its path and line.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads the configuration file at path and returns it with defaults
// applied and validated (see [Parse]). Relative gossip_key_file,
// cookie_key_file and tls file paths are resolved against the file's directory. Every error
// names the path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *fs.PathError names the path
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, &fileError{path: path, err: err}
	}
	c, err := Parse(data)
	if err != nil {
		return nil, &fileError{path: path, err: err}
	}
	if st, err := f.Stat(); err == nil {
		c.Modified = st.ModTime()
	}
	c.Path = path
	dir := filepath.Dir(path)
	for _, p := range []*string{&c.GossipKeyFile, &c.CookieKeyFile, &c.AdminTokenFile, &c.DataDir} {
		if *p != "" && *p != DataDirOff && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	c.TLS.resolvePaths(dir)
	c.resolveWebhookPaths(dir)
	c.resolveAccessLogPath(dir)
	return c, nil
}

// fileError puts a file name in front of an error; a multi-line error (joined
// problems) gets one indented problem per line.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string {
	msg := e.err.Error()
	if !strings.Contains(msg, "\n") {
		return e.path + ": " + msg
	}
	return e.path + ":\n\t" + strings.ReplaceAll(msg, "\n", "\n\t")
}

func (e *fileError) Unwrap() error { return e.err }

// Parse reads a configuration from YAML (or JSON, which is read as YAML)
// strictly: an unknown key, a key given twice, a value of the wrong type or a
// second YAML document is an error naming the key and its line. It then
// applies the defaults and validates; on any error it returns a nil Config and
// every problem found, joined.
func Parse(data []byte) (*Config, error) {
	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("config is over %d bytes", MaxConfigSize)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	data = jsonForYAML(data)
	c, err := decodeConfig(data)
	if err != nil {
		return nil, err
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeConfig decodes one YAML document strictly.
func decodeConfig(data []byte) (c *Config, err error) {
	defer func() {
		// yaml.v3 has panicked on hostile input before; a config error must
		// stay an error.
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("config: YAML decoder failed: %v", p)
		}
	}()
	c = new(Config)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("config is empty: it needs at least a node name or one room")
		}
		return nil, explainYAML(data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, fmt.Errorf("line %d: config holds a second YAML document; put everything in one", extra.Line)
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	return c, nil
}

// jsonForYAML rewrites the string literals of a JSON document into the
// subset of escapes YAML reads the same way: YAML knows neither "\/" nor
// surrogate pairs ("\ud83d\ude00"). Line breaks are kept, so line numbers in
// errors still match the file. Anything that is not valid JSON is returned as
// it is.
func jsonForYAML(data []byte) []byte {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') || !json.Valid(data) {
		return data
	}
	if bytes.IndexByte(data, '\\') < 0 {
		return data
	}
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		if data[i] != '"' {
			out = append(out, data[i])
			i++
			continue
		}
		j := i + 1
		for data[j] != '"' { // valid JSON: every string is closed
			if data[j] == '\\' {
				j++
			}
			j++
		}
		lit := data[i : j+1]
		i = j + 1
		if bytes.IndexByte(lit, '\\') < 0 {
			out = append(out, lit...)
			continue
		}
		var s string
		if err := json.Unmarshal(lit, &s); err != nil {
			out = append(out, lit...)
			continue
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			out = append(out, lit...)
			continue
		}
		out = append(out, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
	}
	return out
}

// explainYAML rewrites the YAML decoder's type errors so that each names the
// key by its path in the config, such as
//
//	rooms[0] ("shop").totl_active_users: unknown key (line 7)
//
// Syntax errors are returned as they are.
func explainYAML(data []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	idx := indexKeys(data)
	errs := make([]error, 0, len(te.Errors))
	for _, msg := range te.Errors {
		errs = append(errs, errors.New(idx.explain(msg)))
	}
	return errors.Join(errs...)
}

// keyEntry is one mapping key of the YAML document, for error messages.
type keyEntry struct {
	path      string // rooms[0] ("shop").total_active_users
	key       string
	line      int // of the key
	valueLine int
	scalar    bool // the value is a scalar
}

type keyIndex []keyEntry

func indexKeys(data []byte) (idx keyIndex) {
	defer func() { _ = recover() }() // an index is only a nicety for messages
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if depth > 64 {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				idx = append(idx, keyEntry{path: p, key: k.Value, line: k.Line, valueLine: v.Line, scalar: v.Kind == yaml.ScalarNode})
				walk(v, p, depth+1)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if path == "rooms" {
					p = roomLabel(i, mappingString(item, "name"))
				}
				walk(item, p, depth+1)
			}
		}
	}
	walk(doc.Content[0], "", 0)
	return idx
}

// mappingString returns the scalar value of key in mapping n, or "".
func mappingString(n *yaml.Node, key string) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.ScalarNode {
			return n.Content[i+1].Value
		}
	}
	return ""
}

var (
	yamlLineRE    = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlUnknownRE = regexp.MustCompile(`^field (.*) not found in type (\S+)$`)
	yamlTwiceRE   = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
	yamlTypeRE    = regexp.MustCompile(`^cannot unmarshal (.*) into (\S+)$`)
)

// Where an unknown key was found, by the Go type it was decoded into.
var yamlContexts = map[string]string{
	"config.Config":           "at the top level",
	"config.Room":             "in a room",
	"config.Route":            "in an additional route",
	"config.CookieAttributes": "in cookie_attributes",
	"config.TLSConfig":        "in tls",
	"config.ACMEConfig":       "in tls.acme",
}

// What a value should have been, by the Go type it was decoded into.
var yamlWants = map[string]string{
	"int":                     "a whole number",
	"bool":                    "true or false",
	"string":                  "a string",
	"[]string":                "a list of strings",
	"config.Config":           "a mapping of settings",
	"[]config.Room":           "a list of rooms",
	"config.Room":             "a room (a mapping of settings)",
	"[]config.Route":          "a list of routes (host and path)",
	"config.Route":            "a route (a mapping with host and path)",
	"config.CookieAttributes": "a mapping with samesite and secure",
	"config.TLSConfig":        "a mapping of tls settings (cert_file, key_file, redirect_listen, https_port, acme)",
	"config.ACMEConfig":       "a mapping of acme settings (enabled, directory_url, email, hosts, cache_dir, directory_ca_file)",
}

func (idx keyIndex) explain(msg string) string {
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	line, _ := strconv.Atoi(m[1])
	rest := m[2]
	if u := yamlUnknownRE.FindStringSubmatch(rest); u != nil {
		if e, ok := idx.find(func(e keyEntry) bool { return e.line == line && e.key == u[1] }); ok {
			return fmt.Sprintf("%s: unknown key (line %d)", e.path, line)
		}
		where := yamlContexts[u[2]]
		if where == "" {
			where = "in " + u[2]
		}
		return fmt.Sprintf("line %d: unknown key %q %s", line, u[1], where)
	}
	if t := yamlTwiceRE.FindStringSubmatch(rest); t != nil {
		if e, ok := idx.find(func(e keyEntry) bool { return e.line == line && e.key == t[1] }); ok {
			return fmt.Sprintf("%s: given twice (lines %s and %d)", e.path, t[2], line)
		}
		return fmt.Sprintf("line %d: key %q given twice (first at line %s)", line, t[1], t[2])
	}
	// Other errors are about the value on that line: find its key. A type
	// error says whether the value is a scalar; a key on the value's own line
	// ("name: [1]") is a closer match than one above it ("rooms:").
	kind := func(keyEntry) bool { return true }
	if t := yamlTypeRE.FindStringSubmatch(rest); t != nil {
		scalar := !strings.HasPrefix(t[1], "!!seq") && !strings.HasPrefix(t[1], "!!map")
		kind = func(e keyEntry) bool { return e.scalar == scalar }
		if want := yamlWants[t[2]]; want != "" {
			rest = fmt.Sprintf("want %s, not %s", want, t[1])
		}
	}
	for _, f := range []func(keyEntry) bool{
		func(e keyEntry) bool { return e.valueLine == line && kind(e) },
		func(e keyEntry) bool { return e.valueLine == line && kind(e) && e.line == line },
	} {
		if e, ok := idx.find(f); ok {
			return fmt.Sprintf("%s: %s (line %d)", e.path, rest, line)
		}
	}
	return fmt.Sprintf("line %d: %s", line, rest)
}

// find returns the only entry matching f.
func (idx keyIndex) find(f func(keyEntry) bool) (keyEntry, bool) {
	var found keyEntry
	n := 0
	for _, e := range idx {
		if f(e) {
			found = e
			n++
		}
	}
	return found, n == 1
}
