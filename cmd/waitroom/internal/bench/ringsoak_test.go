package bench_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
)

// TestRingSoak runs three nodes under constant load for ten minutes (set
// WAITROOM_SOAK=1; WAITROOM_SOAK_DURATION shortens or lengthens it) and
// checks that waitroom itself never answers 5xx, that memory and goroutines
// stay flat, and that the origin never holds more sessions than the limit
// allows. It is not part of the default suite.
func TestRingSoak(t *testing.T) {
	needEnv(t, "WAITROOM_SOAK", "soak test: set WAITROOM_SOAK=1 (and optionally WAITROOM_SOAK_DURATION=10m)")
	duration := envDuration("WAITROOM_SOAK_DURATION", 10*time.Minute)
	const limit, clients = 50, 150

	// The origin counts the sessions it holds: a client that got in is
	// "on" the origin until it says goodbye.
	var onOrigin, peak atomic.Int64
	origin := edgetest.NewOrigin(t, edgetest.Unrecorded(), edgetest.Serving(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/enter":
			if n := onOrigin.Add(1); n > peak.Load() {
				peak.Store(n)
			}
		case "/leave":
			onOrigin.Add(-1)
			w.Header().Set("Cf-Waiting-Room-Command", "revoke")
		}
		_, _ = io.WriteString(w, "ok")
	})))

	rc := edgetest.Room("shop", limit, limit)
	rc.EnabledOriginCommands = []string{"revoke"}
	rc.SessionDuration = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Traffic opens once the ring has formed, as it would for an on-sale:
	// newCluster waits for it.
	cl := edgetest.NewCluster(t, 3, edgetest.ClusterOptions{
		Rooms:     []config.Room{rc},
		WallClock: true,
		Serve:     true,
		Origin:    origin,
		Name:      func(i int) string { return fmt.Sprintf("soak-%d", i) },
	})
	var urls []string
	for _, n := range cl.Nodes {
		urls = append(urls, n.URL())
	}
	var requests, fivexx, admitted atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(duration)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for time.Now().Before(deadline) && ctx.Err() == nil {
				jar, _ := cookiejar.New(nil)
				client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
				base := urls[rng.IntN(len(urls))]
				get := func(path string) *http.Response {
					resp, err := client.Get(base + path)
					requests.Add(1)
					if err != nil {
						return nil
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode >= 500 {
						fivexx.Add(1)
					}
					return resp
				}
				// Queue until admitted, following Refresh (capped so the
				// soak moves along), then stay a while and leave.
				for time.Now().Before(deadline) {
					resp := get("/enter")
					if resp != nil && resp.Header.Get("Refresh") == "" && resp.StatusCode == http.StatusOK {
						admitted.Add(1)
						break
					}
					wait := 5 * time.Second
					if resp != nil {
						if n, err := edgetest.RefreshSeconds(resp); err == nil {
							wait = min(time.Duration(n)*time.Second, 5*time.Second)
						}
					}
					time.Sleep(wait)
				}
				time.Sleep(time.Duration(2+rng.IntN(8)) * time.Second)
				get("/leave")
			}
		}()
	}

	type sample struct {
		heap       uint64
		goroutines int
	}
	var samples []sample
	tick := time.NewTicker(10 * time.Second)
	for time.Now().Before(deadline) {
		<-tick.C
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		samples = append(samples, sample{ms.HeapAlloc, runtime.NumGoroutine()})
		t.Logf("t=%s heap=%.1f MiB goroutines=%d requests=%d admitted=%d on origin=%d peak=%d",
			time.Duration(len(samples))*10*time.Second, float64(ms.HeapAlloc)/(1<<20), runtime.NumGoroutine(), requests.Load(), admitted.Load(), onOrigin.Load(), peak.Load())
	}
	tick.Stop()
	wg.Wait()

	if n := fivexx.Load(); n > 0 {
		t.Errorf("waitroom answered %d requests with 5xx", n)
	}
	if p := peak.Load(); p > limit*11/10 {
		t.Errorf("the origin held %d sessions at once; the limit is %d", p, limit)
	}
	if len(samples) >= 6 {
		third := len(samples) / 3
		avg := func(s []sample) (float64, float64) {
			var h, g float64
			for _, x := range s {
				h += float64(x.heap)
				g += float64(x.goroutines)
			}
			return h / float64(len(s)), g / float64(len(s))
		}
		h1, g1 := avg(samples[third : 2*third])
		h2, g2 := avg(samples[2*third:])
		t.Logf("middle third: heap %.1f MiB, %.0f goroutines; last third: heap %.1f MiB, %.0f goroutines", h1/(1<<20), g1, h2/(1<<20), g2)
		if h2 > h1*1.5+4<<20 {
			t.Errorf("heap grew from %.1f to %.1f MiB", h1/(1<<20), h2/(1<<20))
		}
		if g2 > g1*1.2+20 {
			t.Errorf("goroutines grew from %.0f to %.0f", g1, g2)
		}
	}
	t.Logf("%d requests, %d admissions, peak %d on the origin (limit %d), %d 5xx", requests.Load(), admitted.Load(), peak.Load(), limit, fivexx.Load())
}
