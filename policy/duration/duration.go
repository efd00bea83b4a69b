// Package duration is the one grammar of a length of time in the files and
// documents people write: a node's configuration and the room API
// (edge/config), and the simulator's scenarios (policy/sim). A duration is a
// number with a unit, "30s", "1m30s", "200ms"; a bare number other than 0 is
// refused, since "30" could mean seconds or nanoseconds, and an empty value
// is zero.
//
// It imports nothing of ours, so that the configuration, which is data and
// pure checks, and the simulator can both use it.
package duration

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as a string with a unit in YAML and
// JSON.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes d as a string such as "30s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a duration string such as "30s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a duration such as \"30s\", not a list or mapping", n.Line)}}
	}
	v, err := Parse(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*d = v
	return nil
}

// MarshalJSON writes d as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string such as "30s"; null leaves d alone.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Parse reads a duration in the grammar of the package doc.
func Parse(s string) (Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write a number with a unit, such as \"30s\" or \"1m\"", s)
	}
	return Duration(v), nil
}
