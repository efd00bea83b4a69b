package config_test

import (
	"testing"

	"github.com/waitroom/waitroom/edge/config"
)

func TestRoutingConfig(t *testing.T) {
	const room = "rooms:\n  - name: shop\n    total_active_users: 5\n    new_users_per_minute: 1\n"
	tests := []struct {
		name string
		yaml string
		want []string // nil: accepted
	}{
		{"unrouted refuse is accepted", "origin: http://127.0.0.1:3000\nunrouted: refuse\n" + room, nil},
		{"unrouted pass with an origin is accepted", "origin: http://127.0.0.1:3000\nunrouted: pass\n" + room + "    origin: http://127.0.0.1:3001\n", nil},
		{"unrouted pass without a default origin is refused", "unrouted: pass\n" + room + "    origin: http://127.0.0.1:3001\n",
			[]string{"unrouted: pass needs origin"}},
		{"another unrouted value is refused, naming the allowed ones", "origin: http://127.0.0.1:3000\nunrouted: proxy\n" + room,
			[]string{`unrouted: "proxy" must be refuse`, "or pass"}},
		{"a room path with an encoded slash is refused", "origin: http://127.0.0.1:3000\n" + room + "    path: /shop%2Fsale\n",
			[]string{`rooms[0] ("shop").path: "/shop%2Fsale" has no single meaning`}},
		{"a room path with encoded dot segments is refused", "origin: http://127.0.0.1:3000\n" + room + "    path: /shop/%2e%2e/x\n",
			[]string{`rooms[0] ("shop").path: "/shop/%2e%2e/x" must not contain "." or ".." segments`}},
		{"a room path with a backslash is refused", "origin: http://127.0.0.1:3000\n" + room + "    path: '/shop\\x'\n",
			[]string{`rooms[0] ("shop").path:`, "no single meaning"}},
		{"a bypass path_prefix must start with a slash", "origin: http://127.0.0.1:3000\n" + room + "    bypass:\n      - path_prefix: static/\n",
			[]string{`rooms[0] ("shop").bypass[0].path_prefix: "static/" must start with "/"`}},
		{"a bypass path_prefix with dot segments is refused", "origin: http://127.0.0.1:3000\n" + room + "    bypass:\n      - path_prefix: /static/../\n",
			[]string{`rooms[0] ("shop").bypass[0].path_prefix: "/static/../" must not contain`}},
		{"a bypass path_suffix with ;parameters is refused", "origin: http://127.0.0.1:3000\n" + room + "    bypass:\n      - path_suffix: ;.css\n",
			[]string{`rooms[0] ("shop").bypass[0].path_suffix: ";.css" must not contain ";"`}},
		{"a bypass path_suffix with an encoded slash is refused", "origin: http://127.0.0.1:3000\n" + room + "    bypass:\n      - path_suffix: '%2f.css'\n",
			[]string{`rooms[0] ("shop").bypass[0].path_suffix: "%2f.css" has no single meaning`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkParse(t, []byte(tt.yaml), tt.want)
		})
	}
	t.Run("the --unrouted flag overrides the file", func(t *testing.T) {
		c := &config.Config{}
		o := config.Overrides{Origin: "http://127.0.0.1:3000", TotalActiveUsers: 5, Unrouted: "pass"}
		o.Set = func(f string) bool { return f == "origin" || f == "total-active-users" || f == "unrouted" }
		if err := o.Apply(c); err != nil {
			t.Fatal(err)
		}
		if c.Unrouted != config.UnroutedPass {
			t.Errorf("unrouted %q, want pass", c.Unrouted)
		}
	})
}
