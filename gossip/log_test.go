package gossip

import (
	"bytes"
	"encoding/json"
	"log"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestMemberlistLogLinesGoThroughZerolog(t *testing.T) {
	for _, tc := range []struct {
		name, line, level, message string
	}{
		{"a debug line is logged at debug", "[DEBUG] memberlist: Stream connection from=127.0.0.1:1234", "debug", "Stream connection from=127.0.0.1:1234"},
		{"a trace line is logged at debug", "[TRACE] memberlist: tick", "debug", "tick"},
		{"an info line is logged at info", "[INFO] memberlist: Marking node-2 as failed", "info", "Marking node-2 as failed"},
		{"a warning is logged at warn", "[WARN] memberlist: Was able to connect to node-1 over TCP but UDP probes failed", "warn", "Was able to connect to node-1 over TCP but UDP probes failed"},
		{"an error is logged at error", "[ERR] memberlist: Failed to send gossip to 10.0.0.1:7946", "error", "Failed to send gossip to 10.0.0.1:7946"},
		{"an ERROR line is logged at error", "[ERROR] memberlist: failed", "error", "failed"},
		{"a line without a level is logged at info", "memberlist: something", "info", "something"},
		{"a line from the transport's own logger keeps its text", "[ERR] Failed to shutdown transport: x", "error", "Failed to shutdown transport: x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			lg := log.New(logWriter{log: zerolog.New(&buf)}, "", 0)
			lg.Println(tc.line)
			var got struct {
				Level, Message, Component string
			}
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("%v: %q", err, buf.String())
			}
			if got.Level != tc.level || got.Message != tc.message || got.Component != "memberlist" {
				t.Fatalf("got %+v, want level %s message %q component memberlist", got, tc.level, tc.message)
			}
		})
	}

	for _, tc := range []struct {
		name, line, reason string
	}{
		{"a packet no key opens is a refusal", "[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=127.0.0.1:5000", RefusedUnauthenticated},
		{"a plaintext packet to a keyed node is a refusal", "[ERR] memberlist: Decrypt packet failed: unsupported encryption version 8 from=127.0.0.1:5000", RefusedUnauthenticated},
		{"a plaintext stream to a keyed node is a refusal", "[ERR] memberlist: failed to receive: Encryption is configured but remote state is not encrypted from=127.0.0.1:5000", RefusedUnauthenticated},
		{"a stream no key opens is a refusal", "[ERR] memberlist: failed to receive: No installed keys could decrypt the message from=127.0.0.1:5000", RefusedUnauthenticated},
		{"a packet of another cluster is a refusal", `[ERR] memberlist: discarding packet with unacceptable label "staging": from=127.0.0.1:5000`, RefusedWrongLabel},
		{"a stream of another cluster is a refusal", `[ERR] memberlist: discarding stream with unacceptable label "staging": from=127.0.0.1:5000`, RefusedWrongLabel},
		{"a failed push-pull for another reason is logged as it is", "[ERR] memberlist: failed to receive: EOF from=127.0.0.1:5000", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			var got []string
			lg := log.New(logWriter{log: zerolog.New(&buf), refuse: func(reason string, err error) { got = append(got, reason) }}, "", 0)
			lg.Println(tc.line)
			switch {
			case tc.reason == "" && (len(got) != 0 || buf.Len() == 0):
				t.Fatalf("refusals %v, log %q; want the line logged", got, buf.String())
			case tc.reason != "" && (len(got) != 1 || got[0] != tc.reason || buf.Len() != 0):
				t.Fatalf("refusals %v, log %q; want one %s and no line of its own", got, buf.String(), tc.reason)
			}
		})
	}

	t.Run("debug lines are dropped when the logger is at info", func(t *testing.T) {
		var buf bytes.Buffer
		lg := log.New(logWriter{log: zerolog.New(&buf).Level(zerolog.InfoLevel)}, "", 0)
		lg.Println("[DEBUG] memberlist: noise")
		if buf.Len() != 0 {
			t.Fatalf("logged %q", buf.String())
		}
	})

	closed := "[ERR] memberlist: Failed to send gossip to 127.0.0.1:7946: write udp 127.0.0.1:7946->127.0.0.1:7947: use of closed network connection"
	for _, tc := range []struct {
		name     string
		stopping bool
		want     string
	}{
		{"a socket closed under a stopping node's last gossip round is no error", true, ""},
		{"a socket closed while the node runs is an error", false, `"level":"error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			lg := log.New(logWriter{log: zerolog.New(&buf).Level(zerolog.InfoLevel), stopping: func() bool { return tc.stopping }}, "", 0)
			lg.Println(closed)
			if got := buf.String(); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("logged %q, want %q", got, tc.want)
			}
		})
	}
}
