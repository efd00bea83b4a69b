package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/loadtest"
)

// SoakOptions configure the steady-memory check.
type SoakOptions struct {
	Duration time.Duration // default 5 min
	Interval time.Duration // between samples (default 10 s; less for a run under 5 minutes)
	// Warmup is left out of the trend: the generator's pool of waiting
	// visitors fills during the first refresh interval (default 30 s).
	Warmup time.Duration
	// Rate is the requests per second of each of the two main streams
	// (default 500); MaxInFlight caps each stream's outstanding requests
	// (default 64), so that a neighbour's burst of CPU on a shared machine
	// cannot pile up connections and pass for growth.
	Rate        float64
	MaxInFlight int
	Progress    io.Writer
}

// SoakSample is one sample of the process, taken after a GC.
type SoakSample struct {
	At         time.Duration `json:"at_ns"`
	HeapAlloc  uint64        `json:"heap_alloc"`
	HeapSys    uint64        `json:"heap_sys"`
	Goroutines int           `json:"goroutines"`
	Requests   uint64        `json:"requests"`
}

// SoakReport is the steady-memory check's outcome.
type SoakReport struct {
	Duration time.Duration `json:"duration_ns"`
	Rate     float64       `json:"rate_per_stream"`
	Samples  []SoakSample  `json:"samples"`
	// Over the samples after warm-up: the median heap and goroutines of the
	// first and last thirds, and the heap's least-squares slope.
	HeapFirst       float64            `json:"heap_first_third"`
	HeapLast        float64            `json:"heap_last_third"`
	SlopePerMinute  float64            `json:"heap_slope_bytes_per_minute"`
	GoroutinesFirst int                `json:"goroutines_first_third"`
	GoroutinesLast  int                `json:"goroutines_last_third"`
	Results         []*loadtest.Result `json:"streams"`
	OK              bool               `json:"ok"`
	Verdict         string             `json:"verdict"`
}

// Err is the check's verdict as an error: nil when memory held steady.
func (r *SoakReport) Err() error {
	if r.OK {
		return nil
	}
	return fmt.Errorf("steady memory: %s", r.Verdict)
}

// Soak runs constant load on the bench Env for Duration, three open-loop
// streams at once: admitted visitors on the open room (cookies kept),
// waiting visitors on the full room checking in at their refresh interval,
// and a tenth of the rate in new visitors joining the full room's queue. It
// samples the live heap (after GC) and the goroutines every Interval and
// judges the trend after Warmup: the median of the heap's last third may
// exceed that of its first by at most 2 MiB or 10%, the goroutines' by at
// most 50 or 10%.
func Soak(ctx context.Context, o SoakOptions) (*SoakReport, error) {
	if o.Duration <= 0 {
		o.Duration = 5 * time.Minute
	}
	if o.Interval <= 0 {
		o.Interval = min(10*time.Second, max(time.Second, o.Duration/30))
	}
	if o.Warmup <= 0 {
		o.Warmup = 30 * time.Second
	}
	if o.Duration < 3*o.Warmup {
		// The waiting visitors' pool fills during the first refresh
		// interval: a shorter run would see that and call it growth.
		return nil, fmt.Errorf("soak: a run of %s is too short to judge: at least %s (three times the %s warm-up)", o.Duration, 3*o.Warmup, o.Warmup)
	}
	if o.Rate <= 0 {
		o.Rate = 500
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	env, err := StartEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer env.Close()

	streams := []loadtest.Options{
		{Targets: []string{env.OpenURL}, Rate: o.Rate, MaxInFlight: o.MaxInFlight, Duration: o.Duration},
		{Targets: []string{env.FullURL}, Rate: o.Rate, MaxInFlight: o.MaxInFlight, Duration: o.Duration, HonorRefresh: true},
		{Targets: []string{env.FullURL}, Rate: o.Rate / 10, MaxInFlight: o.MaxInFlight, Duration: o.Duration, RequestsPerVisitor: 1},
	}
	rep := &SoakReport{Duration: o.Duration, Rate: o.Rate, Results: make([]*loadtest.Result, len(streams))}
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Results[i], errs[i] = loadtest.Run(ctx, s)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-tick.C:
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			s := SoakSample{At: time.Since(start), HeapAlloc: ms.HeapAlloc, HeapSys: ms.HeapSys, Goroutines: runtime.NumGoroutine()}
			rep.Samples = append(rep.Samples, s)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "soak %4s  heap %7.2f MiB  goroutines %4d\n", s.At.Round(time.Second), float64(s.HeapAlloc)/(1<<20), s.Goroutines)
			}
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	rep.judge(o.Warmup)
	return rep, nil
}

func (rep *SoakReport) judge(warmup time.Duration) {
	var s []SoakSample
	for _, x := range rep.Samples {
		if x.At >= warmup {
			s = append(s, x)
		}
	}
	if len(s) < 3 {
		rep.Verdict = fmt.Sprintf("too few samples after warm-up (%d)", len(s))
		return
	}
	// Medians of the first and last thirds: a leak raises the whole of the
	// last third, a burst of connections on a busy machine one sample.
	third := len(s) / 3
	first, last := s[:third], s[len(s)-third:]
	heap := func(xs []SoakSample) float64 {
		v := make([]float64, len(xs))
		for i, x := range xs {
			v[i] = float64(x.HeapAlloc)
		}
		return median(v)
	}
	gor := func(xs []SoakSample) int {
		v := make([]float64, len(xs))
		for i, x := range xs {
			v[i] = float64(x.Goroutines)
		}
		return int(median(v))
	}
	rep.HeapFirst, rep.HeapLast = heap(first), heap(last)
	rep.GoroutinesFirst, rep.GoroutinesLast = gor(first), gor(last)
	// Least-squares slope of the heap over time, for the report.
	var sx, sy, sxx, sxy float64
	for _, x := range s {
		t := x.At.Minutes()
		sx += t
		sy += float64(x.HeapAlloc)
		sxx += t * t
		sxy += t * float64(x.HeapAlloc)
	}
	n := float64(len(s))
	if d := n*sxx - sx*sx; d != 0 {
		rep.SlopePerMinute = (n*sxy - sx*sy) / d
	}
	growth := rep.HeapLast - rep.HeapFirst
	allowed := max(2<<20, 0.1*rep.HeapFirst)
	allowedG := max(50, rep.GoroutinesFirst/10)
	rep.OK = growth <= allowed && rep.GoroutinesLast <= rep.GoroutinesFirst+allowedG
	rep.Verdict = fmt.Sprintf("heap %.2f → %.2f MiB (medians of the first and last thirds after warm-up: %+.1f KiB, allowed %+.0f KiB), slope %+.1f KiB/min; goroutines %d → %d (allowed %+d)",
		rep.HeapFirst/(1<<20), rep.HeapLast/(1<<20), growth/1024, allowed/1024, rep.SlopePerMinute/1024, rep.GoroutinesFirst, rep.GoroutinesLast, allowedG)
}

// WriteText prints the samples, the streams and the verdict.
func (rep *SoakReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "at\theap (after GC)\theap sys\tgoroutines")
	for _, s := range rep.Samples {
		fmt.Fprintf(tw, "%s\t%.2f MiB\t%.1f MiB\t%d\n", s.At.Round(time.Second), float64(s.HeapAlloc)/(1<<20), float64(s.HeapSys)/(1<<20), s.Goroutines)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	names := []string{"open room, admitted visitors", "full room, waiting visitors checking in", "full room, new visitors"}
	for i, r := range rep.Results {
		if r == nil {
			continue
		}
		fmt.Fprintf(w, "stream %-40s %8d requests  %7.0f/s  admitted %d  queued %d  errors %d  p99 %s\n",
			names[i]+":", r.Requests, r.Throughput, r.Admitted, r.Queued, r.Errors, loadtest.FormatDuration(r.Latency.P99))
	}
	verdict := "steady"
	if !rep.OK {
		verdict = "GROWING"
	}
	_, err := fmt.Fprintf(w, "%s: %s\n", verdict, rep.Verdict)
	return err
}
