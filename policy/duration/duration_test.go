package duration_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/waitroom/waitroom/policy/duration"
)

func TestADurationIsWrittenAsAStringInJSONAndYAML(t *testing.T) {
	d := duration.Duration(90 * time.Second)
	j, _ := json.Marshal(d)
	y, _ := yaml.Marshal(d)
	if string(j) != `"1m30s"` || strings.TrimSpace(string(y)) != "1m30s" {
		t.Errorf("json %s yaml %s", j, y)
	}
}

func TestTheGrammar(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       time.Duration
		ok         bool
	}{
		{"a JSON duration string is read", `"45s"`, 45 * time.Second, true},
		{"a JSON zero is read as zero", `0`, 0, true},
		{"a JSON null leaves the duration alone", `null`, 7, true},
		{"a JSON number with no unit is refused", `30`, 0, false},
		{"a JSON string that is not a duration is refused", `"soon"`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := duration.Duration(7)
			err := json.Unmarshal([]byte(tc.json), &d)
			if (err == nil) != tc.ok {
				t.Fatalf("error %v", err)
			}
			if tc.ok && time.Duration(d) != tc.want {
				t.Errorf("got %v", time.Duration(d))
			}
		})
	}
	for _, tc := range []struct {
		name, yaml string
		want       time.Duration
		ok         bool
	}{
		{"a YAML duration with units is read", `d: 1m30s`, 90 * time.Second, true},
		{"a YAML fraction with a unit is read", `d: 0.5s`, 500 * time.Millisecond, true},
		{"a YAML zero is read as zero", `d: 0`, 0, true},
		{"an empty YAML value is zero", `d: ""`, 0, true},
		{"a YAML number with no unit is refused: 30 could be seconds or nanoseconds", `d: 30`, 0, false},
		{"a YAML fraction with no unit is refused too", `d: 1.5`, 0, false},
		{"a YAML list is refused", `d: [1s]`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v struct {
				D duration.Duration `yaml:"d"`
			}
			err := yaml.Unmarshal([]byte(tc.yaml), &v)
			if (err == nil) != tc.ok {
				t.Fatalf("error %v", err)
			}
			if tc.ok && v.D.D() != tc.want {
				t.Errorf("got %v", v.D.D())
			}
			if !tc.ok && !strings.Contains(err.Error(), "line 1") {
				t.Errorf("the error %q does not say the line", err)
			}
		})
	}
}
