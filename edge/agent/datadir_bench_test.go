package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/datadir"
	"github.com/waitroom/waitroom/gossip"
)

// BenchmarkSaveThousandRooms saves a node's state with 1,000 rooms in its
// data directory, as the saver does once a second while it changes:
// Save's encoding, the seal, and the write with its fsyncs. Each room has
// its settings and a busy sale's counts: arrivals and admissions for every
// minute of the retention window, and visitors in line in five buckets.
// It reports the file's size.
//
//	go test -run '^$' -bench SaveThousandRooms -benchtime 20x ./edge/agent/
func BenchmarkSaveThousandRooms(b *testing.B) {
	n, err := gossip.Start(gossip.Config{Name: "bench", Bind: "127.0.0.1:0", Profile: gossip.Local, Keys: [][]byte{bytes.Repeat([]byte{7}, 32)}, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Kill()
	now := time.Now().Unix() / 60
	for i := range 1000 {
		name := fmt.Sprintf("room-%04d", i)
		rc := config.Room{Name: name, Path: "/" + name, TotalActiveUsers: 500, NewUsersPerMinute: 200, SessionDuration: 5, CookieSuffix: name, Message: "Thank you for waiting."}
		rc.ApplyDefaults()
		raw, _ := json.Marshal(rc)
		n.SetRegister("room/"+name, raw)
		var incs []gossip.Inc
		for m := now - gossip.DefaultRetention + 1; m <= now; m++ {
			incs = append(incs, gossip.Inc{Key: crdt.Key{Room: name, Kind: crdt.Arrivals, Minute: m}, N: 250}, gossip.Inc{Key: crdt.Key{Room: name, Kind: crdt.Admitted, Minute: m}, N: 200})
		}
		for bucket := now - 4; bucket <= now; bucket++ {
			for m := bucket; m <= now; m++ {
				incs = append(incs, gossip.Inc{Key: crdt.Key{Room: name, Kind: crdt.WaitingPlus, Bucket: bucket, Minute: m}, N: 40})
			}
		}
		n.Add(incs...)
	}
	d, err := datadir.Open(b.TempDir(), [][]byte{bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		b.Fatal(err)
	}
	var size int
	var encoding, writing time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		raw, err := n.Save()
		if err != nil {
			b.Fatal(err)
		}
		encoded := time.Now()
		if err := d.Write("state", raw); err != nil {
			b.Fatal(err)
		}
		encoding += encoded.Sub(start)
		writing += time.Since(encoded)
		size = len(raw)
	}
	b.ReportMetric(float64(size), "file-bytes")
	b.ReportMetric(float64(encoding.Milliseconds())/float64(b.N), "encode-ms/op")
	b.ReportMetric(float64(writing.Milliseconds())/float64(b.N), "seal+write-ms/op")
}
