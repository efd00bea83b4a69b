package canon

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // canonical path, when err is nil
		err  error
	}{
		{name: "a plain path stays as it is", in: "/shop/item", want: "/shop/item"},
		{name: "the root stays as it is", in: "/", want: "/"},
		{name: "an empty path is the root", in: "", want: "/"},
		{name: "repeated slashes collapse", in: "//shop///item", want: "/shop/item"},
		{name: "a trailing slash is kept", in: "/shop/", want: "/shop/"},
		{name: "repeated trailing slashes become one", in: "/shop//", want: "/shop/"},
		{name: "a dot segment is dropped", in: "/./shop/", want: "/shop/"},
		{name: "a dot-dot segment removes the one before", in: "/x/../shop/", want: "/shop/"},
		{name: "dot-dot never climbs above the root", in: "/../../shop/", want: "/shop/"},
		{name: "a path ending in dot ends in a slash", in: "/shop/.", want: "/shop/"},
		{name: "a path ending in dot-dot ends in a slash", in: "/shop/x/..", want: "/shop/"},
		{name: "a path of dot-dots is the root", in: "/a/../..", want: "/"},
		{name: "encoded dots are dots", in: "/%2e%2e/shop/", want: "/shop/"},
		{name: "upper-case encoded dots are dots", in: "/static/%2E%2E/shop/", want: "/shop/"},
		{name: "a mix of encoded and plain dots is dot-dot", in: "/static/.%2e/shop/", want: "/shop/"},
		{name: "encoded unreserved letters are decoded", in: "/%73%68%6F%70/", want: "/shop/"},
		{name: "encoded tilde, dash and underscore are decoded", in: "/%7e%2d%5f", want: "/~-_"},
		{name: "other escapes keep their meaning in upper case", in: "/a%3fb%3bc%20d", want: "/a%3Fb%3Bc%20d"},
		{name: "UTF-8 escapes are upper-cased", in: "/caf%c3%a9/", want: "/caf%C3%A9/"},
		{name: "raw UTF-8 bytes are escaped", in: "/caf\xc3\xa9/", want: "/caf%C3%A9/"},
		{name: "a space is escaped", in: "/a b", want: "/a%20b"},
		{name: "sub-delimiters, colon and at stay", in: "/a!$&'()*+,=:@b", want: "/a!$&'()*+,=:@b"},
		{name: "an encoded percent before non-hex stays", in: "/100%25off", want: "/100%25off"},
		{name: "path parameters are kept", in: "/shop;jsessionid=1/x", want: "/shop;jsessionid=1/x"},
		{name: "dot-dot with parameters is dot-dot", in: "/static/..;/shop/", want: "/shop/"},
		{name: "dot with parameters is dot", in: "/.;x/shop/", want: "/shop/"},
		{name: "a segment of only parameters is dropped", in: "/;x/shop/", want: "/shop/"},
		{name: "an encoded semicolon after a name is data, not parameters", in: "/static/a.%3b/x", want: "/static/a.%3B/x"},
		{name: "a dot-dot with encoded parameters is refused", in: "/static/..%3b/x", err: ErrPathDotParameters},
		{name: "a dot with encoded parameters is refused", in: "/.%3B", err: ErrPathDotParameters},
		{name: "a hidden file is not a dot segment", in: "/.well-known/x", want: "/.well-known/x"},
		{name: "three dots are a name", in: "/.../x", want: "/.../x"},
		{name: "an encoded slash is refused", in: "/shop%2F..%2F", err: ErrPathSeparator},
		{name: "a lower-case encoded slash is refused", in: "/static%2f..%2fshop/", err: ErrPathSeparator},
		{name: "an encoded backslash is refused", in: "/static/..%5cshop/", err: ErrPathSeparator},
		{name: "a backslash is refused", in: "/static\\..\\shop/", err: ErrPathSeparator},
		{name: "double encoding is refused", in: "/static/%252e%252e/shop/", err: ErrPathDoubleEncode},
		{name: "double encoding spelt through decoded digits is refused", in: "/%25%32%65", err: ErrPathDoubleEncode},
		{name: "an encoded NUL is refused", in: "/shop%00.css", err: ErrPathControl},
		{name: "a control character is refused", in: "/shop\x01", err: ErrPathControl},
		{name: "a malformed escape is refused", in: "/shop%zz", err: ErrPathBadEscape},
		{name: "a cut-off escape is refused", in: "/shop%2", err: ErrPathBadEscape},
		{name: "a relative path is refused", in: "shop/", err: ErrPathNotAbsolute},
		{name: "an asterisk is refused", in: "*", err: ErrPathNotAbsolute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Path(tt.in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Path(%q) = %q, %v; want error %v", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Path(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			if again, err := Path(got); err != nil || again != got {
				t.Errorf("not idempotent: Path(%q) = %q, %v", got, again, err)
			}
		})
	}
}

func TestKey(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"a path without parameters is its own key", "/shop/x", "/shop/x"},
		{"parameters are cut from each segment", "/shop;a=1/x;b", "/shop/x"},
		{"a parameter before a trailing slash is cut", "/shop;v=2/", "/shop/"},
		{"a suffix hidden in parameters is cut", "/shop/page;.css", "/shop/page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Key(tt.in); got != tt.want {
				t.Errorf("Key(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestHost(t *testing.T) {
	tests := []struct {
		name, in, want string
		bad            bool
	}{
		{name: "a lower-case name stays", in: "vip.example.com", want: "vip.example.com"},
		{name: "a name is lower-cased", in: "VIP.Example.COM", want: "vip.example.com"},
		{name: "the trailing dot of a fully qualified name is dropped", in: "vip.example.com.", want: "vip.example.com"},
		{name: "the trailing dot is dropped before a port", in: "vip.example.com.:8080", want: "vip.example.com:8080"},
		{name: "a port is kept", in: "vip.example.com:8080", want: "vip.example.com:8080"},
		{name: "leading zeros of a port are dropped", in: "vip.example.com:0080", want: "vip.example.com:80"},
		{name: "an empty port is dropped", in: "vip.example.com:", want: "vip.example.com"},
		{name: "an IPv4 address stays", in: "127.0.0.1:8080", want: "127.0.0.1:8080"},
		{name: "an IPv6 literal takes its shortest form", in: "[0:0:0:0:0:0:0:1]:8080", want: "[::1]:8080"},
		{name: "an IPv6 literal is lower-cased", in: "[FE80::A]", want: "[fe80::a]"},
		{name: "an empty host stays empty", in: "", want: ""},
		{name: "an underscore is allowed", in: "my_host", want: "my_host"},
		{name: "two trailing dots are refused", in: "vip.example.com..", bad: true},
		{name: "an empty label is refused", in: "vip..example.com", bad: true},
		{name: "a leading dot is refused", in: ".example.com", bad: true},
		{name: "a percent escape is refused", in: "vip%2eexample.com", bad: true},
		{name: "a bare IPv6 address is refused", in: "::1", bad: true},
		{name: "an IPv6 zone is refused", in: "[fe80::1%25eth0]", bad: true},
		{name: "an IPv4 address in brackets is refused", in: "[127.0.0.1]", bad: true},
		{name: "a port above 65535 is refused", in: "vip.example.com:65536", bad: true},
		{name: "a signed port is refused", in: "vip.example.com:+80", bad: true},
		{name: "non-ASCII is refused", in: "vïp.example.com", bad: true},
		{name: "a lone dot is refused", in: ".", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Host(tt.in)
			if tt.bad {
				if !errors.Is(err, ErrHostBad) {
					t.Fatalf("Host(%q) = %q, %v; want refused", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Host(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			if again, err := Host(got); err != nil || again != got {
				t.Errorf("not idempotent: Host(%q) = %q, %v", got, again, err)
			}
		})
	}
}

// FuzzPath checks the path normaliser on any input: it never
// panics, it is idempotent, and what it returns is absolute, without dot or
// empty segments, encoded separators or double encoding, so that no route or
// bypass rule can be matched by a spelling the origin reads otherwise.
func FuzzPath(f *testing.F) {
	for _, s := range []string{
		"/", "", "//shop/", "/./shop/", "/x/../shop/", "/%2e%2e/shop/", "/static/../shop/",
		"/shop%2F..%2F", "/.%2e/", "/static\\..\\shop", "/static/..;/shop/", "/a%25%32%65",
		"/caf\xc3\xa9/", "/%7E%41;x/..", "/SHOP", "/a/b/c/../../..", "/;/;x/.;/..;",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Path(in)
		if err != nil {
			return
		}
		again, err := Path(got)
		if err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, got, again, err)
		}
		if !strings.HasPrefix(got, "/") {
			t.Fatalf("%q -> %q: not absolute", in, got)
		}
		if strings.Contains(got, "//") {
			t.Fatalf("%q -> %q: an empty segment", in, got)
		}
		dec, err := url.PathUnescape(got)
		if err != nil {
			t.Fatalf("%q -> %q: does not decode: %v", in, got, err)
		}
		if strings.Count(dec, "/") != strings.Count(got, "/") {
			t.Fatalf("%q -> %q: an encoded slash", in, got)
		}
		if strings.ContainsRune(dec, '\\') {
			t.Fatalf("%q -> %q: a backslash", in, got)
		}
		for seg := range strings.SplitSeq(dec, "/") {
			name, _, _ := strings.Cut(seg, ";")
			if name == "." || name == ".." {
				t.Fatalf("%q -> %q: a dot segment", in, got)
			}
		}
		if d2, err := url.PathUnescape(dec); err == nil {
			for seg := range strings.SplitSeq(d2, "/") {
				if seg == "." || seg == ".." || strings.ContainsAny(seg, "\\") {
					t.Fatalf("%q -> %q: a dot segment or separator after a second decoding", in, got)
				}
			}
		}
		key := Key(got)
		if k2, err := Path(key); err != nil || k2 != key || Key(key) != key {
			t.Fatalf("routing key %q of %q is not canonical: %q, %v", key, got, k2, err)
		}
	})
}

// FuzzHost checks the host normaliser: never a panic, idempotent.
func FuzzHost(f *testing.F) {
	for _, s := range []string{"vip.example.com.", "VIP.example.com:8080", "[::1]:80", "a..b", "127.0.0.1", ":80", "[", "x:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Host(in)
		if err != nil {
			return
		}
		if again, err := Host(got); err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, got, again, err)
		}
		if strings.HasSuffix(strings.Split(got, ":")[0], ".") || got != strings.ToLower(got) {
			t.Fatalf("%q -> %q: not canonical", in, got)
		}
	})
}
