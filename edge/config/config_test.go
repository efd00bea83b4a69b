package config_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/waitroom/waitroom/edge/config"
)

// M is a YAML mapping under construction.
type M = map[string]any

// baseRoom is a valid room that each case changes.
func baseRoom() M {
	return M{
		"name":                 "shop",
		"host":                 "shop.example.com",
		"path":                 "/",
		"total_active_users":   500,
		"new_users_per_minute": 200,
	}
}

// configYAML builds a config with one valid room and lets edit change it.
func configYAML(t *testing.T, edit func(top, room M)) []byte {
	t.Helper()
	room := baseRoom()
	top := M{"origin": "http://127.0.0.1:3000", "rooms": []any{room}}
	if edit != nil {
		edit(top, room)
	}
	data, err := yaml.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkParse parses data and checks that it is accepted (want empty) or
// refused with an error containing every string in want.
func checkParse(t *testing.T, data []byte, want []string) *config.Config {
	t.Helper()
	c, err := config.Parse(data)
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("refused, want accepted: %v\nconfig:\n%s", err, data)
		}
		if c == nil {
			t.Fatal("nil config and nil error")
		}
		return c
	}
	if err == nil {
		t.Fatalf("accepted, want an error with %q\nconfig:\n%s", want, data)
	}
	if c != nil {
		t.Errorf("a refused config came back non-nil")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q:\n%v", w, err)
		}
	}
	return nil
}

type ruleCase struct {
	name string
	edit func(top, room M)
	want []string // substrings of the error; none: accepted
}

func runRules(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkParse(t, configYAML(t, tc.edit), tc.want)
		})
	}
}

func set(key string, v any) func(top, room M) { return func(_, room M) { room[key] = v } }
func setTop(key string, v any) func(top, room M) {
	return func(top, _ M) { top[key] = v }
}
func del(key string) func(top, room M) { return func(_, room M) { delete(room, key) } }

func TestRoomName(t *testing.T) {
	runRules(t, []ruleCase{
		{"a room without a name is refused", del("name"),
			[]string{`rooms[0].name: is required`, "1–64 characters"}},
		{"a room name with upper-case letters is refused", set("name", "Shop"),
			[]string{`rooms[0] ("Shop").name: "Shop" must be 1–64 characters of a–z, 0–9, '_' and '-'`}},
		{"a room name with digits, underscores and hyphens is accepted", set("name", "shop_2-b"), nil},
		{"a room name of one digit is accepted", set("name", "7"), nil},
		{"a room name of 64 characters is accepted", set("name", strings.Repeat("a", 64)), nil},
		{"a room name of 65 characters is refused", set("name", strings.Repeat("a", 65)),
			[]string{".name:", "must be 1–64 characters"}},
		{"a room name starting with a hyphen is refused", set("name", "-shop"), []string{`("-shop").name:`}},
		{"a room name starting with an underscore is refused", set("name", "_shop"), []string{`("_shop").name:`}},
		{"a room name with a space is refused", set("name", "the shop"), []string{`("the shop").name:`}},
		{"a room name that is a number is read as text and accepted", set("name", 42), nil},
	})
}

func TestRoomHost(t *testing.T) {
	runRules(t, []ruleCase{
		{"an empty host is accepted as any host", set("host", ""), nil},
		{"a missing host is accepted as any host", del("host"), nil},
		{"an upper-case host is accepted", set("host", "Shop.Example.COM"), nil},
		{"a host with a trailing dot is accepted", set("host", "shop.example.com."), nil},
		{"a host with a port is accepted", set("host", "shop.example.com:8443"), nil},
		{"a single-label host is accepted", set("host", "localhost"), nil},
		{"an IPv4 host with a port is accepted", set("host", "192.0.2.1:8080"), nil},
		{"a bracketed IPv6 host with a port is accepted", set("host", "[2001:db8::1]:8080"), nil},
		{"an unbracketed IPv6 host is refused", set("host", "2001:db8::1"),
			[]string{`rooms[0] ("shop").host: "2001:db8::1" must put an IPv6 address in brackets`}},
		{"a host with port 0 is refused", set("host", "shop.example.com:0"),
			[]string{`rooms[0] ("shop").host:`, "port from 1 to 65535"}},
		{"a host with port 65536 is refused", set("host", "shop.example.com:65536"),
			[]string{"port from 1 to 65535"}},
		{"a host with an empty port is refused", set("host", "shop.example.com:"),
			[]string{`.host:`, `port after ":"`}},
		{"a host with a path is refused", set("host", "shop.example.com/sale"),
			[]string{`.host: "shop.example.com/sale" must be a host name or IP address, without a scheme or path`}},
		{"a host written as a URL is refused", set("host", "https://shop.example.com"),
			[]string{`.host:`, "without a scheme"}},
		{"a wildcard host is refused", set("host", "*.example.com"),
			[]string{`.host: "*.example.com" must be a host name`}},
		{"a host with an underscore is refused", set("host", "my_shop.example.com"), []string{`.host:`}},
		{"a host label ending in a hyphen is refused", set("host", "shop-.example.com"), []string{`.host:`}},
		{"a host with an all-digit last label that is no IP address is refused", set("host", "256.1.1.1"), []string{`.host:`}},
		{"a host with a label of 64 characters is refused", set("host", strings.Repeat("a", 64)+".com"), []string{`.host:`}},
	})
}

func TestRoomPath(t *testing.T) {
	runRules(t, []ruleCase{
		{"a path of / is accepted", set("path", "/"), nil},
		{"a missing path is accepted as /", del("path"), nil},
		{"a nested path is accepted", set("path", "/shop/sale/"), nil},
		{"a path with non-ASCII letters is accepted", set("path", "/boutique/été"), nil},
		{"a path without a leading slash is refused", set("path", "shop"),
			[]string{`rooms[0] ("shop").path: "shop" must start with "/"`}},
		{"a path with a query is refused", set("path", "/shop?x=1"), []string{`.path:`, "without query or fragment"}},
		{"a path with a fragment is refused", set("path", "/shop#top"), []string{`.path:`, "without query or fragment"}},
		{"a path with a dot-dot segment is refused", set("path", "/shop/../admin"), []string{`.path:`, `".."`}},
		{"a path with a dot segment is refused", set("path", "/./shop"), []string{`.path:`, `".."`}},
		{"a path with a space is refused", set("path", "/the shop"), []string{`.path:`, "spaces or control characters"}},
		{"a path with a control character is refused", set("path", "/shop\x01"), []string{`.path:`, "control characters"}},
	})
}

func TestAdditionalRoutes(t *testing.T) {
	runRules(t, []ruleCase{
		{"an additional route on another host is accepted",
			set("additional_routes", []M{{"host": "www.example.com", "path": "/shop"}}), nil},
		{"an additional route without a host is accepted on the room's host",
			set("additional_routes", []M{{"path": "/cart"}}), nil},
		{"an additional route repeating the room's route is refused",
			set("additional_routes", []M{{"host": "shop.example.com", "path": "/"}}),
			[]string{`rooms[0] ("shop").additional_routes[0]: route "shop.example.com/" repeats the room's host and path`}},
		{"an additional route without a host or path repeats the room's route and is refused",
			set("additional_routes", []M{{}}), []string{`additional_routes[0]: route "shop.example.com/" repeats`}},
		{"two equal additional routes are refused",
			set("additional_routes", []M{{"path": "/cart"}, {"host": "SHOP.example.com", "path": "//cart"}}),
			[]string{`additional_routes[1]: route "shop.example.com/cart" repeats additional_routes[0]`}},
		{"an additional route with a bad path is refused",
			set("additional_routes", []M{{"host": "www.example.com", "path": "cart"}}),
			[]string{`rooms[0] ("shop").additional_routes[0].path: "cart" must start with "/"`}},
		{"an additional route with a bad host is refused",
			set("additional_routes", []M{{"host": "www example com", "path": "/"}}),
			[]string{`rooms[0] ("shop").additional_routes[0].host: "www example com"`}},
		{"an additional route with an unknown key is refused",
			set("additional_routes", []M{{"host": "www.example.com", "pth": "/"}}),
			[]string{`rooms[0] ("shop").additional_routes[0].pth: unknown key`}},
	})
}

func TestOrigin(t *testing.T) {
	runRules(t, []ruleCase{
		{"an http origin at the top level is accepted", setTop("origin", "http://127.0.0.1:3000"), nil},
		{"an https origin with a path is accepted", setTop("origin", "https://origin.example.com/base"), nil},
		{"a room's own origin is enough without a top-level one", func(top, room M) {
			delete(top, "origin")
			room["origin"] = "https://origin.example.com"
		}, nil},
		{"a room without any origin is refused", setTop("origin", ""),
			[]string{`rooms[0] ("shop").origin: is required: set origin on the room or at the top level`}},
		{"a top-level origin that is not http or https is refused", setTop("origin", "ftp://origin.example.com"),
			[]string{`origin: "ftp://origin.example.com" must be an absolute http:// or https:// URL`}},
		{"a relative top-level origin is refused", setTop("origin", "/origin"),
			[]string{`origin: "/origin" must be an absolute http:// or https:// URL`}},
		{"a top-level origin without a scheme is refused", setTop("origin", "origin.example.com:3000"),
			[]string{`origin: "origin.example.com:3000" must be an absolute`}},
		{"a room origin with a fragment is refused", set("origin", "http://origin.example.com/#x"),
			[]string{`rooms[0] ("shop").origin: "http://origin.example.com/#x" must not have a fragment`}},
		{"a room origin without a host is refused", set("origin", "http:///x"),
			[]string{`rooms[0] ("shop").origin:`, "absolute http:// or https:// URL"}},
		{"a room origin with a bad port is refused", set("origin", "http://origin.example.com:99999"),
			[]string{`rooms[0] ("shop").origin:`}},
	})
}

func TestLimits(t *testing.T) {
	both := func(tau, nupm any) func(top, room M) {
		return func(_, room M) { room["total_active_users"], room["new_users_per_minute"] = tau, nupm }
	}
	runRules(t, []ruleCase{
		{"one active user and one new user per minute are accepted", both(1, 1), nil},
		{"the largest total_active_users is accepted", both(2147483647, 2147483647), nil},
		{"a total_active_users above the largest is refused", both(2147483648, 1),
			[]string{`rooms[0] ("shop").total_active_users: 2147483648 must be from 1 to 2147483647`}},
		{"a missing total_active_users is refused", del("total_active_users"),
			[]string{`rooms[0] ("shop").total_active_users: is required: from 1 to 2147483647`}},
		{"a zero total_active_users is refused", both(0, 1),
			[]string{`total_active_users: is required: from 1 to 2147483647`}},
		{"a negative total_active_users is refused", both(-5, 1),
			[]string{`total_active_users: -5 must be from 1 to 2147483647`}},
		{"new_users_per_minute equal to total_active_users is accepted", both(500, 500), nil},
		{"new_users_per_minute above total_active_users is refused", both(500, 900),
			[]string{`rooms[0] ("shop").new_users_per_minute: 900 must be ≤ total_active_users (500)`}},
		{"a missing new_users_per_minute is refused", del("new_users_per_minute"),
			[]string{`rooms[0] ("shop").new_users_per_minute: is required: from 1 to total_active_users`}},
		{"a negative new_users_per_minute is refused", both(500, -3),
			[]string{`new_users_per_minute: -3 must be from 1 to total_active_users`}},
		{"a huge new_users_per_minute with a bad total_active_users is refused on both", both(-1, 3000000000),
			[]string{"total_active_users: -1 must be", "new_users_per_minute: 3000000000 must be from 1 to total_active_users (at most 2147483647)"}},
		{"a total_active_users written as text is refused naming the field", both("lots", 1),
			[]string{`rooms[0] ("shop").total_active_users: want a whole number, not !!str`}},
		{"a max_queue of 0 is accepted as unlimited", set("max_queue", 0), nil},
		{"a positive max_queue is accepted", set("max_queue", 10000), nil},
		{"a negative max_queue is refused", set("max_queue", -1),
			[]string{`rooms[0] ("shop").max_queue: -1 must be 0 (unlimited) or more`}},
	})
}

func TestSessionDuration(t *testing.T) {
	runRules(t, []ruleCase{
		{"a missing session_duration is accepted", del("session_duration"), nil},
		{"a session_duration of 0 is accepted as the default", set("session_duration", 0), nil},
		{"a session_duration of 1 minute is accepted", set("session_duration", 1), nil},
		{"a session_duration of 30 minutes is accepted", set("session_duration", 30), nil},
		{"a session_duration of 31 minutes is refused", set("session_duration", 31),
			[]string{`rooms[0] ("shop").session_duration: 31 must be from 1 to 30 minutes`}},
		{"a negative session_duration is refused", set("session_duration", -1),
			[]string{`session_duration: -1 must be from 1 to 30 minutes`}},
		{"a session_duration written as a duration is refused", set("session_duration", "5m"),
			[]string{`rooms[0] ("shop").session_duration: want a whole number`}},
	})
}

func TestQueueing(t *testing.T) {
	cases := []ruleCase{
		{"a missing queueing_method is accepted", del("queueing_method"), nil},
		{"an unknown queueing_method is refused", set("queueing_method", "lifo"),
			[]string{`rooms[0] ("shop").queueing_method: "lifo" must be one of fifo, random, passthrough, reject`}},
		{"an upper-case queueing_method is refused", set("queueing_method", "FIFO"),
			[]string{`queueing_method: "FIFO" must be one of`}},
		{"a queueing_status_code of 0 is accepted as the default", set("queueing_status_code", 0), nil},
		{"a queueing_status_code of 418 is refused", set("queueing_status_code", 418),
			[]string{`rooms[0] ("shop").queueing_status_code: 418 must be one of 200, 202, 429`}},
		{"a queueing_status_code of 503 is refused", set("queueing_status_code", 503),
			[]string{`queueing_status_code: 503 must be one of 200, 202, 429`}},
		{"queue_all, suspended, disable_session_renewal and json_response_enabled are accepted", func(_, room M) {
			room["queue_all"], room["suspended"] = true, true
			room["disable_session_renewal"], room["json_response_enabled"] = true, true
		}, nil},
		{"a queue_all that is not a boolean is refused naming the field", set("queue_all", "sometimes"),
			[]string{`rooms[0] ("shop").queue_all: want true or false`}},
	}
	for _, m := range []string{"fifo", "random", "passthrough", "reject"} {
		cases = append(cases, ruleCase{"the queueing_method " + m + " is accepted", set("queueing_method", m), nil})
	}
	for _, code := range []int{200, 202, 429} {
		cases = append(cases, ruleCase{"a queueing_status_code of " + itoa(code) + " is accepted", set("queueing_status_code", code), nil})
	}
	runRules(t, cases)
}

func TestCookieSettings(t *testing.T) {
	attrs := func(ss, sec string) func(top, room M) {
		return set("cookie_attributes", M{"samesite": ss, "secure": sec})
	}
	cases := []ruleCase{
		{"an empty cookie_suffix is accepted", set("cookie_suffix", ""), nil},
		{"a cookie_suffix of letters, digits and underscores is accepted", set("cookie_suffix", "abc_DEF_123"), nil},
		{"a cookie_suffix of 32 characters is accepted", set("cookie_suffix", strings.Repeat("x", 32)), nil},
		{"a cookie_suffix of 33 characters is refused", set("cookie_suffix", strings.Repeat("x", 33)),
			[]string{`rooms[0] ("shop").cookie_suffix:`, "must be at most 32 characters of A–Z, a–z, 0–9 and '_'"}},
		{"a cookie_suffix with a hyphen is refused", set("cookie_suffix", "a-b"),
			[]string{`rooms[0] ("shop").cookie_suffix: "a-b" must be at most 32 characters`}},
		{"a cookie_suffix with a semicolon is refused", set("cookie_suffix", "a;b"), []string{`cookie_suffix: "a;b"`}},
		{"a cookie_suffix with an accented letter is refused", set("cookie_suffix", "café"), []string{`cookie_suffix: "café"`}},
		{"missing cookie_attributes are accepted", del("cookie_attributes"), nil},
		{"empty cookie_attributes are accepted", attrs("", ""), nil},
		{"an unknown samesite is refused", attrs("Lax", "auto"),
			[]string{`rooms[0] ("shop").cookie_attributes.samesite: "Lax" must be one of auto, lax, strict, none`}},
		{"an unknown secure is refused", attrs("auto", "sometimes"),
			[]string{`rooms[0] ("shop").cookie_attributes.secure: "sometimes" must be one of auto, always, never`}},
		{"samesite none with secure never is refused", attrs("none", "never"),
			[]string{`rooms[0] ("shop").cookie_attributes.samesite: none needs secure auto or always`}},
		{"samesite none with secure left out is accepted as secure auto", attrs("none", ""), nil},
		{"an unknown key in cookie_attributes is refused", set("cookie_attributes", M{"samesite": "lax", "httponly": true}),
			[]string{`rooms[0] ("shop").cookie_attributes.httponly: unknown key`}},
	}
	for _, ss := range []string{"auto", "lax", "strict", "none"} {
		for _, sec := range []string{"auto", "always", "never"} {
			if ss == "none" && sec == "never" {
				continue
			}
			cases = append(cases, ruleCase{"samesite " + ss + " with secure " + sec + " is accepted", attrs(ss, sec), nil})
		}
	}
	runRules(t, cases)
}

func TestCustomPageAndCommands(t *testing.T) {
	runRules(t, []ruleCase{
		{"an empty custom page is accepted", set("custom_page_html", ""), nil},
		{"a custom page using the reference's variables is accepted", set("custom_page_html",
			"<p>{{#waitTimeKnown}}{{waitTimeFormatted}}{{/waitTimeKnown}}{{^waitTimeKnown}}…{{/waitTimeKnown}} {{{lastUpdated}}}</p>"), nil},
		{"a custom page with an unclosed section is refused naming the template error", set("custom_page_html", "<p>{{#waitTimeKnown}}</p>"),
			[]string{`rooms[0] ("shop").custom_page_html: is not a valid Mustache template: line 1: Section waitTimeKnown has no closing tag`}},
		{"a custom page with an unclosed tag is refused", set("custom_page_html", "<p>{{waitTime</p>"),
			[]string{`rooms[0] ("shop").custom_page_html: is not a valid Mustache template:`}},
		{"a custom page with a partial is refused", set("custom_page_html", "{{> /etc/passwd}}"),
			[]string{`rooms[0] ("shop").custom_page_html: uses the partial {{> /etc/passwd}}; partials are not supported`}},
		{"a custom page with a partial inside a section is refused", set("custom_page_html", "{{#a}}{{^b}}{{>footer}}{{/b}}{{/a}}"),
			[]string{`custom_page_html: uses the partial {{> footer}}`}},
		{"the revoke origin command is accepted", set("enabled_origin_commands", []string{"revoke"}), nil},
		{"no origin commands are accepted", set("enabled_origin_commands", []string{}), nil},
		{"an unknown origin command is refused", set("enabled_origin_commands", []string{"revoke", "reboot"}),
			[]string{`rooms[0] ("shop").enabled_origin_commands[1]: "reboot" must be one of revoke`}},
		{"a challenge with its site key and secret is accepted", func(_, room M) {
			room["turnstile_mode"], room["turnstile_action"] = "invisible", "infinite_queue"
			room["turnstile_site_key"], room["turnstile_secret"] = "0x4AAA", "secret"
		}, nil},
		{"a challenge without a site key or secret is refused", func(_, room M) {
			room["turnstile_mode"] = "visible_managed"
		}, []string{`turnstile_site_key: is required when turnstile_mode is visible_managed`, `turnstile_secret: is required`}},
		{"an unknown challenge mode is refused", set("turnstile_mode", "always"),
			[]string{`turnstile_mode: "always" must be one of off, invisible, visible_non_interactive, visible_managed`}},
		{"an unknown challenge action is refused", set("turnstile_action", "block"),
			[]string{`turnstile_action: "block" must be one of log, infinite_queue`}},
		{"an unknown verifier failure policy is refused", set("turnstile_on_error", "maybe"),
			[]string{`turnstile_on_error: "maybe" must be allow`}},
		{"an unknown challenge provider is refused", set("turnstile_provider", "captchaco"),
			[]string{`turnstile_provider: "captchaco" must be one of turnstile, hcaptcha, recaptcha`}},
		{"a description is accepted", set("description", "The spring sale: 50% off"), nil},
	})
}

func TestStrictKeys(t *testing.T) {
	runRules(t, []ruleCase{
		{"an unknown top-level key is refused naming the key", setTop("listne", ":8080"),
			[]string{`listne: unknown key (line `}},
		{"an unknown room key is refused naming the key and the room", set("totl_active_users", 5),
			[]string{`rooms[0] ("shop").totl_active_users: unknown key (line `}},
		{"Cloudflare's read-only and unsupported room fields are accepted", func(_, room M) {
			room["id"] = "699d98642c564d2e855e9661899b7252"
			room["created_on"] = "2014-01-01T05:20:00.12345Z"
			room["modified_on"] = "2014-01-01T05:20:00.12345Z"
			room["default_template_language"] = "en-US"
			room["next_event_prequeue_start_time"] = nil
			room["next_event_start_time"] = "2021-09-28T15:00:00.000Z"
			room["errors"] = []any{}
		}, nil},
		{"a Cloudflare room field at the top level is refused", setTop("id", "699d"),
			[]string{`id: unknown key`}},
		{"a rooms value that is not a list is refused", setTop("rooms", "shop"),
			[]string{`rooms: want a list of rooms, not !!str`}},
	})

	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"an empty config is refused", "", []string{"config is empty"}},
		{"a config of only comments is refused", "# nothing\n", []string{"config is empty"}},
		{"a config with no rooms is accepted, for a node that only gossips", "node: relay\nrooms: []\n", nil},
		{"a config that is a list is refused", "- a\n- b\n", []string{"want a mapping of settings"}},
		{"a key given twice is refused naming both lines",
			"origin: http://127.0.0.1:3000\nrooms:\n  - name: shop\n    total_active_users: 5\n    total_active_users: 6\n    new_users_per_minute: 1\n",
			[]string{`rooms[0] ("shop").total_active_users: given twice (lines 4 and 5)`}},
		{"a second YAML document is refused", "origin: http://127.0.0.1:3000\n---\nlisten: :8080\n",
			[]string{"line 2: config holds a second YAML document"}},
		{"a list where a room name belongs is refused naming the field",
			"origin: http://127.0.0.1:3000\nrooms:\n  - name: [shop]\n    total_active_users: {a: 1}\n    new_users_per_minute: 1\n",
			[]string{"rooms[0].name: want a string, not !!seq (line 3)", "rooms[0].total_active_users: want a whole number, not !!map (line 4)"}},
		{"a YAML syntax error is refused with its line", "rooms:\n  - name: [shop\n", []string{"yaml: line"}},
		{"an unknown key in a one-line JSON config is refused naming the key",
			`{"origin": "http://127.0.0.1:3000", "rooms": [{"name": "shop", "total_active_users": 5, "new_users_per_minute": 1, "colour": "red"}]}`,
			[]string{`rooms[0] ("shop").colour: unknown key (line 1)`}},
		{"several problems are all reported",
			"origin: http://127.0.0.1:3000\nlog_level: loud\nrooms:\n  - name: shop\n    total_active_users: 5\n    new_users_per_minute: 9\n    session_duration: 99\n",
			[]string{"log_level:", "new_users_per_minute: 9 must be ≤ total_active_users (5)", "session_duration: 99"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkParse(t, []byte(tc.yaml), tc.want)
		})
	}
}

func TestTopLevel(t *testing.T) {
	cases := []ruleCase{
		{"a node name like a host name is accepted", setTop("node", "pop-ams-1.example.net"), nil},
		{"a node name with a space is refused", setTop("node", "pop ams"),
			[]string{`node: "pop ams" must be 1–128 characters`}},
		{"a listen address with only a port is accepted", setTop("listen", ":80"), nil},
		{"a listen address with a host name is accepted", setTop("listen", "localhost:8080"), nil},
		{"a listen address on IPv6 is accepted", setTop("listen", "[::1]:8080"), nil},
		{"a listen address without a port is refused", setTop("listen", "8080"),
			[]string{`listen: "8080" must be host:port, such as ":8080"`}},
		{"a listen port above 65535 is refused", setTop("listen", ":99999"),
			[]string{`listen: ":99999" must be host:port with a port from 0 to 65535`}},
		{"a listen port by service name is refused", setTop("listen", ":http"),
			[]string{`listen: ":http" must be host:port with a port from 0 to 65535`}},
		{"an admin address equal to the listen address is refused", setTop("admin", ":8080"),
			[]string{`admin: :8080 overlaps listen (:8080)`}},
		{"an admin address on the listen port of a wildcard listener is refused", setTop("admin", "127.0.0.1:8080"),
			[]string{`admin: 127.0.0.1:8080 overlaps listen (:8080)`}},
		{"a gossip address on the listen port is refused", setTop("gossip", "0.0.0.0:8080"),
			[]string{`gossip: 0.0.0.0:8080 overlaps listen (:8080)`}},
		{"listeners on port 0 never overlap", func(top, _ M) { top["listen"], top["admin"], top["gossip"] = ":0", "127.0.0.1:0", ":0" }, nil},
		{"listeners on one port on different hosts are accepted", func(top, _ M) {
			top["listen"], top["admin"] = "192.0.2.1:8080", "127.0.0.1:8080"
		}, nil},
		{"a gossip address without an IP is accepted", setTop("gossip", ":7946"), nil},
		{"a gossip address with a host name is refused", setTop("gossip", "localhost:7946"),
			[]string{`gossip: "localhost:7946" must be ip:port with an IP address`}},
		{"an advertise IP address is accepted", setTop("advertise", "192.0.2.10"), nil},
		{"an advertise ip:port is accepted", setTop("advertise", "192.0.2.10:7946"), nil},
		{"an advertise IPv6 address is accepted", setTop("advertise", "2001:db8::10"), nil},
		{"an advertise host name is refused", setTop("advertise", "pop1.example.net"),
			[]string{`advertise: "pop1.example.net" must be an IP address, or ip:port`}},
		{"an advertise port of 0 is refused", setTop("advertise", "192.0.2.10:0"),
			[]string{`advertise: "192.0.2.10:0" must be ip:port with a port from 1 to 65535`}},
		{"seeds by name, address and port are accepted", setTop("seeds", []string{"pop2.example.net", "192.0.2.11:7946", "[2001:db8::11]:7946"}), nil},
		{"an empty seed is refused", setTop("seeds", []string{"pop2.example.net", ""}),
			[]string{`seeds[1]: ""`}},
		{"a seed written as a URL is refused", setTop("seeds", []string{"http://pop2.example.net"}),
			[]string{`seeds[0]: "http://pop2.example.net" must be a host name or IP address, without a scheme or path`}},
		{"an unknown gossip_profile is refused", setTop("gossip_profile", "internet"),
			[]string{`gossip_profile: "internet" must be one of lan, local, wan`}},
		{"a gossip_label of 255 bytes is accepted", setTop("gossip_label", strings.Repeat("l", 255)), nil},
		{"a gossip_label of 256 bytes is refused", setTop("gossip_label", strings.Repeat("l", 256)),
			[]string{`gossip_label: is 256 bytes; the limit is 255`}},
		{"an unknown log_level is refused", setTop("log_level", "trace"),
			[]string{`log_level: "trace" must be one of debug, info, warn, error`}},
		{"an origin_timeout with a unit is accepted", setTop("origin_timeout", "1m30s"), nil},
		{"an origin_timeout of 0 is accepted as the default", setTop("origin_timeout", 0), nil},
		{"an origin_timeout without a unit is refused", setTop("origin_timeout", 30),
			[]string{`origin_timeout: "30" is not a duration: write a number with a unit, such as "30s"`}},
		{"an origin_timeout that is a list is refused", setTop("origin_timeout", []string{"30s"}),
			[]string{`origin_timeout: want a duration such as "30s"`}},
		{"a negative origin_timeout is refused", setTop("origin_timeout", "-1s"),
			[]string{`origin_timeout: -1s must be positive`}},
		{"admin_hosts of names and addresses are accepted", setTop("admin_hosts", []string{"waitroom-admin.internal", "Admin.Example.com.", "192.0.2.1", "[2001:db8::1]"}), nil},
		{"an admin_hosts entry with a port is refused", setTop("admin_hosts", []string{"admin.internal:9090"}),
			[]string{`admin_hosts[0]: "admin.internal:9090" must be a host name or IP address without a port`}},
		{"an admin_hosts entry written as a URL is refused", setTop("admin_hosts", []string{"ok.internal", "http://admin.internal"}),
			[]string{`admin_hosts[1]: "http://admin.internal" must be a host name or IP address`}},
		{"a max_connections of 1 is accepted", setTop("max_connections", 1), nil},
		{"a negative max_connections is refused", setTop("max_connections", -1),
			[]string{`max_connections: -1 must be from 1 to 1000000 (default 10000)`}},
		{"a max_connections over a million is refused", setTop("max_connections", 1000001),
			[]string{`max_connections: 1000001 must be from 1 to 1000000`}},
		{"listener timeouts with units are accepted", func(top, _ M) {
			top["read_header_timeout"], top["client_timeout"], top["idle_timeout"] = "5s", "2m", "75s"
		}, nil},
		{"a read_header_timeout over five minutes is refused", setTop("read_header_timeout", "6m"),
			[]string{`read_header_timeout: 6m0s must be from 100ms to 5m0s (default 10s)`}},
		{"a client_timeout under 100ms is refused", setTop("client_timeout", "10ms"),
			[]string{`client_timeout: 10ms must be from 100ms to 1h0m0s (default 1m0s)`}},
		{"a negative idle_timeout is refused", setTop("idle_timeout", "-1s"),
			[]string{`idle_timeout: -1s must be from 100ms to 1h0m0s (default 2m0s)`}},
		{"key file paths are accepted as they are", func(top, _ M) {
			top["gossip_key_file"], top["cookie_key_file"] = "/etc/waitroom/gossip.keys", "cookie.keys"
		}, nil},
	}
	for _, p := range []string{"lan", "local", "wan"} {
		cases = append(cases, ruleCase{"the gossip_profile " + p + " is accepted", setTop("gossip_profile", p), nil})
	}
	for _, l := range []string{"debug", "info", "warn", "error"} {
		cases = append(cases, ruleCase{"the log_level " + l + " is accepted", setTop("log_level", l), nil})
	}
	runRules(t, cases)
}

// twoRooms builds a config of rooms a and b, each changed by its edit.
func twoRooms(t *testing.T, editA, editB func(M)) []byte {
	t.Helper()
	a, b := baseRoom(), baseRoom()
	a["name"], b["name"] = "a", "b"
	a["path"], b["path"] = "/a", "/b"
	editA(a)
	editB(b)
	data, err := yaml.Marshal(M{"origin": "http://127.0.0.1:3000", "rooms": []any{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestAcrossRooms(t *testing.T) {
	none := func(M) {}
	for _, tc := range []struct {
		name         string
		editA, editB func(M)
		want         []string
	}{
		{"two rooms with the same name are refused",
			func(r M) { r["cookie_suffix"] = "a" }, func(r M) { r["name"] = "a" },
			[]string{`rooms[1] ("a").name: "a" is already the name of rooms[0] ("a")`}},
		{"two rooms on one route are refused",
			func(r M) { r["path"], r["cookie_suffix"] = "/shop", "a" }, func(r M) { r["path"] = "/shop" },
			[]string{`rooms[1] ("b").path: route "shop.example.com/shop" is already used by rooms[0] ("a") (path)`}},
		{"two rooms on one route written differently are refused",
			func(r M) { r["path"], r["cookie_suffix"] = "/shop", "a" }, func(r M) { r["host"], r["path"] = "SHOP.example.com.", "//shop" },
			[]string{`rooms[1] ("b").path: route "shop.example.com/shop" is already used by rooms[0] ("a")`}},
		{"an additional route on another room's route is refused",
			func(r M) { r["cookie_suffix"] = "a" }, func(r M) { r["additional_routes"] = []M{{"path": "/a"}} },
			[]string{`rooms[1] ("b").additional_routes[0]: route "shop.example.com/a" is already used by rooms[0] ("a") (path)`}},
		{"two rooms on one path of any host are refused",
			func(r M) { r["host"], r["path"], r["cookie_suffix"] = "", "/x", "a" }, func(r M) { r["host"], r["path"] = "", "/x" },
			[]string{`route "/x" on any host is already used by rooms[0] ("a")`}},
		{"two rooms on one host without cookie suffixes are refused",
			none, none,
			[]string{`rooms[1] ("b").cookie_suffix: cookie __waitroom is also used by rooms[0] ("a") on host "shop.example.com"; give one of them a different cookie_suffix`}},
		{"two rooms on one host with the same cookie suffix are refused",
			func(r M) { r["cookie_suffix"] = "x" }, func(r M) { r["cookie_suffix"] = "x" },
			[]string{`rooms[1] ("b").cookie_suffix: cookie __waitroom_x is also used by rooms[0] ("a")`}},
		{"two rooms on one host with different cookie suffixes are accepted",
			func(r M) { r["cookie_suffix"] = "a" }, func(r M) { r["cookie_suffix"] = "b" }, nil},
		{"two rooms on one host, one with a cookie suffix, are accepted",
			none, func(r M) { r["cookie_suffix"] = "b" }, nil},
		{"two rooms on different hosts without cookie suffixes are accepted",
			none, func(r M) { r["host"] = "tickets.example.com" }, nil},
		{"two rooms on one host with different ports share cookies and are refused",
			func(r M) { r["host"] = "shop.example.com:8080" }, func(r M) { r["host"] = "shop.example.com:8443" },
			[]string{`rooms[1] ("b").cookie_suffix: cookie __waitroom is also used by rooms[0] ("a") on host "shop.example.com"`}},
		{"a room on any host and a room on one host without cookie suffixes are refused",
			func(r M) { r["host"] = "" }, none,
			[]string{`rooms[1] ("b").cookie_suffix: cookie __waitroom is also used by rooms[0] ("a") on host "shop.example.com"`}},
		{"two rooms on any host without cookie suffixes are refused",
			func(r M) { r["host"] = "" }, func(r M) { r["host"] = "" },
			[]string{`cookie __waitroom is also used by rooms[0] ("a") on any host`}},
		{"a room whose additional route shares a host with another room needs a cookie suffix",
			func(r M) { r["host"] = "a.example.com" },
			func(r M) {
				r["host"] = "b.example.com"
				r["additional_routes"] = []M{{"host": "a.example.com", "path": "/b"}}
			},
			[]string{`rooms[1] ("b").cookie_suffix: cookie __waitroom is also used by rooms[0] ("a") on host "a.example.com"`}},
		{"an unknown key in the second room names that room",
			func(r M) { r["cookie_suffix"] = "a" }, func(r M) { r["colour"] = "red" },
			[]string{`rooms[1] ("b").colour: unknown key`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkParse(t, twoRooms(t, tc.editA, tc.editB), tc.want)
		})
	}
}

func TestDefaults(t *testing.T) {
	c := checkParse(t, configYAML(t, func(_, room M) { delete(room, "path"); delete(room, "host") }), nil)
	host, _ := os.Hostname()
	checks := []struct {
		name      string
		got, want any
	}{
		{"the node is named after the host", c.Node, host},
		{"the public listener is :8080", c.Listen, ":8080"},
		{"the admin listener is loopback port 9090", c.Admin, "127.0.0.1:9090"},
		{"gossip binds every address on port 7946", c.Gossip, "0.0.0.0:7946"},
		{"the gossip profile is lan", c.GossipProfile, "lan"},
		{"the log level is info", c.LogLevel, "info"},
		{"the origin timeout is 30 seconds", time.Duration(c.OriginTimeout), 30 * time.Second},
		{"the public listener holds at most 10000 connections", c.MaxConnections, 10000},
		{"request headers must come within 10 seconds", time.Duration(c.ReadHeaderTimeout), 10 * time.Second},
		{"a client may stall for 60 seconds", time.Duration(c.ClientTimeout), 60 * time.Second},
		{"a kept-alive connection may idle for 120 seconds", time.Duration(c.IdleTimeout), 120 * time.Second},
		{"a room without an origin takes the top-level one", c.Rooms[0].Origin, "http://127.0.0.1:3000"},
		{"a room without a host is on any host", c.Rooms[0].Host, ""},
		{"a room without a path is on /", c.Rooms[0].Path, "/"},
		{"the session duration is 5 minutes", c.Rooms[0].SessionDuration, 5},
		{"the queueing method is fifo", c.Rooms[0].QueueingMethod, "fifo"},
		{"the queueing status code is 200", c.Rooms[0].QueueingStatusCode, 200},
		{"samesite is auto", c.Rooms[0].CookieAttributes.SameSite, "auto"},
		{"secure is auto", c.Rooms[0].CookieAttributes.Secure, "auto"},
		{"the cookie is __waitroom", c.Rooms[0].CookieName(), "__waitroom"},
		{"the queue is unlimited", c.Rooms[0].MaxQueue, 0},
		{"nothing is queued for all", c.Rooms[0].QueueAll, false},
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			if ch.got != ch.want {
				t.Errorf("got %v, want %v", ch.got, ch.want)
			}
		})
	}

	t.Run("a room's own origin is kept", func(t *testing.T) {
		c := checkParse(t, configYAML(t, set("origin", "https://own.example.com")), nil)
		if got := c.Rooms[0].Origin; got != "https://own.example.com" {
			t.Errorf("origin %q", got)
		}
	})
	t.Run("applying the defaults twice changes nothing", func(t *testing.T) {
		c := checkParse(t, configYAML(t, set("additional_routes", []M{{"path": "/cart"}})), nil)
		before, _ := json.Marshal(c)
		c.ApplyDefaults()
		after, _ := json.Marshal(c)
		if string(before) != string(after) {
			t.Errorf("changed:\n%s\n%s", before, after)
		}
	})
	t.Run("hosts and paths are normalised", func(t *testing.T) {
		c := checkParse(t, configYAML(t, func(_, room M) {
			room["host"], room["path"] = "Shop.Example.COM.:8443", "//sale//now/"
			room["additional_routes"] = []M{{"path": ""}, {"host": "WWW.example.com"}}
		}), nil)
		r := c.Rooms[0]
		if r.Host != "shop.example.com:8443" || r.Path != "/sale/now/" {
			t.Errorf("host %q path %q", r.Host, r.Path)
		}
		want := []config.Route{
			{Host: "shop.example.com:8443", Path: "/sale/now/"},
			{Host: "shop.example.com:8443", Path: "/"},
			{Host: "www.example.com", Path: "/"},
		}
		if got := r.Routes(); !equalRoutes(got, want) {
			t.Errorf("routes %v, want %v", got, want)
		}
	})
}

func TestValidateDoesNotChangeTheConfig(t *testing.T) {
	c := &config.Config{
		Origin: "http://127.0.0.1:3000",
		Rooms: []config.Room{{
			Name: "shop", Host: "SHOP.example.com", TotalActiveUsers: 10, NewUsersPerMinute: 5,
			AdditionalRoutes: []config.Route{{Path: "//cart"}},
		}},
	}
	before, _ := json.Marshal(c)
	if err := c.Validate(); err != nil {
		t.Fatalf("a config without defaults applied is judged as with them: %v", err)
	}
	after, _ := json.Marshal(c)
	if string(before) != string(after) {
		t.Errorf("Validate changed the config:\n%s\n%s", before, after)
	}
}

func TestValidateJoinsEveryProblem(t *testing.T) {
	c := &config.Config{Rooms: []config.Room{{Name: "Bad Name", TotalActiveUsers: 5, NewUsersPerMinute: 9, SessionDuration: 60}}}
	err := c.Validate()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("want errors joined, got %T %v", err, err)
	}
	if n := len(joined.Unwrap()); n != 4 { // name, origin, new_users_per_minute, session_duration
		t.Errorf("%d problems, want 4:\n%v", n, err)
	}
}

func TestAnInheritedBadOriginIsReportedOnce(t *testing.T) {
	c := &config.Config{Origin: "ftp://origin.example.com", Rooms: []config.Room{
		{Name: "a", Host: "a.example.com", TotalActiveUsers: 5, NewUsersPerMinute: 1},
		{Name: "b", Host: "b.example.com", TotalActiveUsers: 5, NewUsersPerMinute: 1},
	}}
	err := c.Validate()
	if err == nil || strings.Count(err.Error(), "ftp://") != 1 || !strings.HasPrefix(err.Error(), `origin: "ftp://origin.example.com"`) {
		t.Errorf("got %v", err)
	}
}

func TestRoomValidateOnItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name string
		room config.Room
		want string
	}{
		{"a valid room without an origin is accepted on its own",
			config.Room{Name: "shop", TotalActiveUsers: 500, NewUsersPerMinute: 200}, ""},
		{"a room's errors are prefixed with its name",
			config.Room{Name: "shop", TotalActiveUsers: 500, NewUsersPerMinute: 900},
			`room "shop": new_users_per_minute: 900 must be ≤ total_active_users (500)`},
		{"an unnamed room's errors say so",
			config.Room{TotalActiveUsers: 500, NewUsersPerMinute: 200}, `room: name: is required`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.room.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCookieName(t *testing.T) {
	for _, tc := range []struct{ suffix, want string }{
		{"", "__waitroom"},
		{"shop", "__waitroom_shop"},
		{"A_1", "__waitroom_A_1"},
	} {
		t.Run("a room with cookie suffix "+strings.TrimSpace(tc.suffix+" ")+"uses the cookie "+tc.want, func(t *testing.T) {
			r := config.Room{CookieSuffix: tc.suffix}
			if got := r.CookieName(); got != tc.want {
				t.Errorf("got %q", got)
			}
		})
	}
}

func TestRoutesWithoutDefaults(t *testing.T) {
	r := config.Room{Host: "Shop.Example.com", AdditionalRoutes: []config.Route{{Path: "/a//b"}, {Host: "x.example.com."}}}
	want := []config.Route{
		{Host: "shop.example.com", Path: "/"},
		{Host: "shop.example.com", Path: "/a/b"},
		{Host: "x.example.com", Path: "/"},
	}
	if got := r.Routes(); !equalRoutes(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if r.Host != "Shop.Example.com" || r.AdditionalRoutes[0].Path != "/a//b" {
		t.Error("Routes changed the room")
	}
}

func equalRoutes(a, b []config.Route) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestExampleConfigs(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "config")
	t.Run("the minimal example loads with one room", func(t *testing.T) {
		c, err := config.Load(filepath.Join(dir, "minimal.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Rooms) != 1 || c.Rooms[0].Name != "shop" || c.Rooms[0].Origin != "http://127.0.0.1:3000" {
			t.Errorf("rooms %+v", c.Rooms)
		}
	})
	t.Run("the full example loads with every field set", func(t *testing.T) {
		c, err := config.Load(filepath.Join(dir, "full.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		r := c.Rooms[0]
		got := []any{c.Node, c.Listen, c.Admin, c.Gossip, c.Advertise, len(c.Seeds), c.GossipProfile, c.GossipLabel,
			c.Origin, c.LogLevel, time.Duration(c.OriginTimeout), len(c.AdminHosts), c.MaxConnections,
			time.Duration(c.ReadHeaderTimeout), time.Duration(c.ClientTimeout), time.Duration(c.IdleTimeout),
			r.Name, r.Description, r.Host, r.Path, len(r.AdditionalRoutes), r.Origin, r.TotalActiveUsers,
			r.NewUsersPerMinute, r.SessionDuration, r.QueueingMethod, r.JSONResponseEnabled, r.CookieSuffix,
			r.CookieAttributes, r.QueueingStatusCode, len(r.EnabledOriginCommands), r.TurnstileMode,
			r.TurnstileAction, r.MaxQueue, r.CookieName()}
		want := []any{"pop-ams-1", ":8080", "127.0.0.1:9090", "0.0.0.0:7946", "192.0.2.10:7946", 2, "lan", "waitroom-prod",
			"https://origin.internal.example.com", "info", 30 * time.Second, 1, 10000,
			10 * time.Second, 60 * time.Second, 120 * time.Second,
			"shop", "The spring sale", "shop.example.com", "/sale", 2, "https://shop-origin.internal.example.com:8443", 5000,
			1000, 10, "fifo", true, "shop",
			config.CookieAttributes{SameSite: "auto", Secure: "auto"}, 202, 1, "off",
			"log", 100000, "__waitroom_shop"}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("field %d: got %v, want %v", i, got[i], want[i])
			}
		}
		if !strings.Contains(r.CustomPageHTML, "{{waitTimeFormatted}}") {
			t.Errorf("custom page %q", r.CustomPageHTML)
		}
	})
	t.Run("relative key files in the full example are resolved against its directory", func(t *testing.T) {
		c, err := config.Load(filepath.Join(dir, "full.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "gossip.keys"); c.GossipKeyFile != want {
			t.Errorf("gossip_key_file %q, want %q", c.GossipKeyFile, want)
		}
		if want := filepath.Join(dir, "cookie.keys"); c.CookieKeyFile != want {
			t.Errorf("cookie_key_file %q, want %q", c.CookieKeyFile, want)
		}
	})
	t.Run("the two-room example loads with distinct cookies on one host", func(t *testing.T) {
		c, err := config.Load(filepath.Join(dir, "two-rooms-same-host.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Rooms) != 2 || c.Rooms[0].Host != c.Rooms[1].Host || c.Rooms[0].CookieName() == c.Rooms[1].CookieName() {
			t.Errorf("rooms %+v", c.Rooms)
		}
		if got := c.Rooms[1].Routes(); len(got) != 2 || got[1] != (config.Route{Host: "www.example.com", Path: "/checkout"}) {
			t.Errorf("routes %v", got)
		}
	})
	t.Run("the two-room example without its cookie suffixes is refused", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(dir, "two-rooms-same-host.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.NewReplacer("cookie_suffix: shop", "", "cookie_suffix: tickets", "").Replace(string(data)))
		checkParse(t, data, []string{`rooms[1] ("tickets").cookie_suffix: cookie __waitroom is also used by rooms[0] ("shop") on host "www.example.com"`})
	})
}

func TestCloudflareExport(t *testing.T) {
	c, err := config.Load(filepath.Join("testdata", "cloudflare_export.json"))
	if err != nil {
		t.Fatalf("a Cloudflare API export does not load: %v", err)
	}
	r := c.Rooms[0]
	for _, ch := range []struct {
		name      string
		got, want any
	}{
		{"the name is kept", r.Name, "production_webinar"},
		{"the escaped slashes of the path are read", r.Path, "/shop/checkout"},
		{"the surrogate pair of the description is read", r.Description, "Production - DO NOT MODIFY 🚀"},
		{"the escaped HTML of the custom page is read", strings.HasPrefix(r.CustomPageHTML, "<p>{{#waitTimeKnown}}"), true},
		{"the limits are kept", [2]int{r.TotalActiveUsers, r.NewUsersPerMinute}, [2]int{200, 200}},
		{"the session duration is kept", r.SessionDuration, 1},
		{"queue_all and suspended are kept", [2]bool{r.QueueAll, r.Suspended}, [2]bool{true, true}},
		{"the cookie suffix is kept", r.CookieName(), "__waitroom_abcd"},
		{"the queueing status code is kept", r.QueueingStatusCode, 202},
		{"the additional route is kept", r.Routes()[1], config.Route{Host: "shop2.example.com", Path: "/shop2/checkout"}},
		{"the turnstile mode is kept", r.TurnstileMode, "off"},
		{"the turnstile action is kept", r.TurnstileAction, "log"},
		{"the default page's language is kept", r.DefaultTemplateLanguage, "es-ES"},
		{"the origin comes from the top level", r.Origin, "https://origin.internal.example.com"},
	} {
		t.Run(ch.name, func(t *testing.T) {
			if ch.got != ch.want {
				t.Errorf("got %v, want %v", ch.got, ch.want)
			}
		})
	}
}

func TestLoadConfigErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	t.Run("a missing file is an error naming the path", func(t *testing.T) {
		path := filepath.Join(dir, "nope.yaml")
		_, err := config.Load(path)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("an invalid file is an error naming the path and every problem", func(t *testing.T) {
		path := filepath.Join(dir, "bad.yaml")
		body := "origin: http://127.0.0.1:3000\nrooms:\n  - name: shop\n    total_active_users: 5\n    new_users_per_minute: 9\n    max_queue: -1\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(path)
		if err == nil {
			t.Fatal("accepted")
		}
		msg := err.Error()
		for _, w := range []string{path + ":\n", "\trooms[0] (\"shop\").new_users_per_minute: 9 must be ≤ total_active_users (5)", "\trooms[0] (\"shop\").max_queue"} {
			if !strings.Contains(msg, w) {
				t.Errorf("error does not contain %q:\n%s", w, msg)
			}
		}
	})
	t.Run("a file with one problem is one line naming the path", func(t *testing.T) {
		path := filepath.Join(dir, "one.yaml")
		if err := os.WriteFile(path, []byte("log_level: loud\nrooms: []\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(path)
		if err == nil || err.Error() != path+`: log_level: "loud" must be one of debug, info, warn, error` {
			t.Errorf("got %v", err)
		}
	})
	t.Run("an absolute key file path is kept", func(t *testing.T) {
		path := filepath.Join(dir, "abs.yaml")
		body := "cookie_key_file: /etc/waitroom/cookie.keys\norigin: http://127.0.0.1:3000\nrooms:\n  - name: shop\n    total_active_users: 5\n    new_users_per_minute: 1\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.CookieKeyFile != "/etc/waitroom/cookie.keys" || c.GossipKeyFile != "" {
			t.Errorf("key files %q %q", c.CookieKeyFile, c.GossipKeyFile)
		}
	})
	t.Run("a file over the size limit is refused", func(t *testing.T) {
		path := filepath.Join(dir, "huge.yaml")
		if err := os.WriteFile(path, make([]byte, config.MaxConfigSize+1), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(path); err == nil || !strings.Contains(err.Error(), "config is over") {
			t.Errorf("got %v", err)
		}
	})
}

func TestDuration(t *testing.T) {
	// The grammar itself is package policy/duration's, tested there.
	t.Run("a config marshalled to JSON parses back the same", func(t *testing.T) {
		c, err := config.Load(filepath.Join("..", "..", "testdata", "config", "full.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := config.Parse(data)
		if err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		again, _ := json.Marshal(c2)
		if string(again) != string(data) {
			t.Errorf("round trip changed the config:\n%s\n%s", data, again)
		}
	})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// FuzzParse checks that no input makes Parse panic, that an
// error is a real error, and that an accepted config is whole: it validates
// again, keeps its defaults and has well-formed cookies and routes.
func FuzzParse(f *testing.F) {
	for _, name := range []string{
		filepath.Join("..", "..", "testdata", "config", "minimal.yaml"),
		filepath.Join("..", "..", "testdata", "config", "full.yaml"),
		filepath.Join("..", "..", "testdata", "config", "two-rooms-same-host.yaml"),
		filepath.Join("testdata", "cloudflare_export.json"),
	} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data)
		if err != nil {
			if c != nil {
				t.Fatal("a config with an error")
			}
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("an accepted config does not validate again: %v", err)
		}
		before, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c.ApplyDefaults()
		if after, _ := json.Marshal(c); string(after) != string(before) {
			t.Fatalf("ApplyDefaults changed an accepted config:\n%s\n%s", before, after)
		}
		names := map[string]bool{}
		for i := range c.Rooms {
			r := &c.Rooms[i]
			if names[r.Name] {
				t.Fatalf("two rooms named %q", r.Name)
			}
			names[r.Name] = true
			if !strings.HasPrefix(r.CookieName(), "__waitroom") {
				t.Fatalf("cookie %q", r.CookieName())
			}
			if r.NewUsersPerMinute < 1 || r.NewUsersPerMinute > r.TotalActiveUsers || r.SessionDuration < 1 || r.SessionDuration > 30 || r.Origin == "" {
				t.Fatalf("accepted a bad room %+v", r)
			}
			for _, rt := range r.Routes() {
				if !strings.HasPrefix(rt.Path, "/") || rt.Host != strings.ToLower(rt.Host) {
					t.Fatalf("route %+v", rt)
				}
			}
		}
	})
}
