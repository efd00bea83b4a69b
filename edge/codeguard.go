package edge

import (
	"sync"
	"time"
)

// The guard against guessing priority codes: an address that fails
// codeFailBurst times in a row is answered 429 without a check for
// codeFailWindow, then allowed one attempt per codeFailWindow (see
// priority.go).
const (
	codeFailBurst  = 5
	codeFailWindow = 30 * time.Second
	// codeGuardMax bounds the addresses the guard remembers; past it the
	// oldest half is forgotten.
	codeGuardMax = 100_000
)

// codeGuard slows addresses that keep presenting invalid codes.
type codeGuard struct {
	mu    sync.Mutex
	fails map[string]codeFails
}

type codeFails struct {
	n    int
	last time.Time
}

// slowed reports whether ip must wait before its next attempt.
func (g *codeGuard) slowed(ip string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.fails[ip]
	return ok && f.n >= codeFailBurst && now.Sub(f.last) < codeFailWindow
}

// failed records a failed attempt by ip.
func (g *codeGuard) failed(ip string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fails == nil {
		g.fails = map[string]codeFails{}
	}
	if len(g.fails) >= codeGuardMax {
		cut := now.Add(-codeFailWindow)
		for k, f := range g.fails {
			if f.last.Before(cut) || len(g.fails) >= codeGuardMax/2 {
				delete(g.fails, k)
			}
		}
	}
	f := g.fails[ip]
	if now.Sub(f.last) >= 10*codeFailWindow {
		f.n = 0 // a failure long after the last starts afresh
	}
	g.fails[ip] = codeFails{n: f.n + 1, last: now}
}

// succeeded forgets ip's failures.
func (g *codeGuard) succeeded(ip string) {
	g.mu.Lock()
	delete(g.fails, ip)
	g.mu.Unlock()
}
