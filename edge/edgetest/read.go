package edgetest

// Reading a node's answers in a test: bodies, cookies, the admin endpoint's
// documents and metrics, and a config's outcome.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
)

// Body reads an answer's body, failing the test if it cannot.
func Body(tb testing.TB, resp *http.Response) string {
	tb.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// SetCookie returns the raw Set-Cookie line for cookie name, or "".
func SetCookie(resp *http.Response, name string) string {
	for _, line := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(line, name+"=") {
			return line
		}
	}
	return ""
}

// CookieAttr returns the value of attribute attr ("Max-Age") in a raw
// Set-Cookie line, and whether it is there at all.
func CookieAttr(line, attr string) (string, bool) {
	for _, part := range strings.Split(line, ";")[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		if strings.EqualFold(k, attr) {
			return v, true
		}
	}
	return "", false
}

// MaxAge is the Max-Age of a raw Set-Cookie line, which must have one.
func MaxAge(tb testing.TB, line string) int {
	tb.Helper()
	v, ok := CookieAttr(line, "Max-Age")
	if !ok {
		tb.Fatalf("Set-Cookie %q has no Max-Age", line)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		tb.Fatalf("Set-Cookie %q: Max-Age %q", line, v)
	}
	return n
}

// AdminURL is the address admin requests built in tests are sent to: a
// loopback one, as the CLI's are (the endpoint refuses other hosts).
const AdminURL = "http://127.0.0.1:9090"

// AdminGet fetches path from the admin handler.
func AdminGet(tb testing.TB, admin http.Handler, path string) *http.Response {
	tb.Helper()
	rec := httptest.NewRecorder()
	admin.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, AdminURL+path, nil))
	return rec.Result()
}

// RoomStatus decodes GET /rooms/{name}/status.
func RoomStatus(tb testing.TB, admin http.Handler, name string) api.RoomStatus {
	tb.Helper()
	resp := AdminGet(tb, admin, "/rooms/"+name+"/status")
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("status of room %s: %d %s", name, resp.StatusCode, Body(tb, resp))
	}
	var rs api.RoomStatus
	if err := json.NewDecoder(resp.Body).Decode(&rs); err != nil {
		tb.Fatal(err)
	}
	return rs
}

// Metric returns the value of the sample whose line starts with prefix (a
// metric name with its labels, as the text format writes them) in /metrics,
// or 0 when there is none.
func Metric(tb testing.TB, admin http.Handler, prefix string) float64 {
	tb.Helper()
	text := Body(tb, AdminGet(tb, admin, "/metrics"))
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix+" ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, prefix)), 64)
			if err != nil {
				tb.Fatalf("metric line %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// CheckParse parses a node's config and holds the outcome: taken when want
// is empty, else refused with an error that contains want.
func CheckParse(t *testing.T, yaml, want string) {
	t.Helper()
	_, err := config.Parse([]byte(yaml))
	switch {
	case want == "" && err != nil:
		t.Errorf("refused: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one containing %q", err, want)
	}
}

// AdminSend sends a request with the given body and headers ("Host" sets the
// Host header) to the admin handler.
func AdminSend(h http.Handler, method, path, body string, hdr ...string) *http.Response {
	req := httptest.NewRequest(method, AdminURL+path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// GetRoom reads a room's settings from a node, or nil when it has none.
func GetRoom(tb testing.TB, h http.Handler, name string) *config.Room {
	tb.Helper()
	resp := AdminGet(tb, h, "/rooms/"+name)
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /rooms/%s: %d %s", name, resp.StatusCode, Body(tb, resp))
	}
	var rc config.Room
	if err := json.NewDecoder(resp.Body).Decode(&rc); err != nil {
		tb.Fatal(err)
	}
	return &rc
}

// AdminJSON sends a JSON body to the admin handler, as the CLI does.
func AdminJSON(tb testing.TB, h http.Handler, method, path string, v any) *http.Response {
	tb.Helper()
	var b []byte
	if v != nil {
		var err error
		if b, err = json.Marshal(v); err != nil {
			tb.Fatal(err)
		}
	}
	req := httptest.NewRequest(method, AdminURL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}
