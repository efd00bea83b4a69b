package visitors

import (
	"sync"
	"time"
)

// The guard against guessing priority codes: a guesser (a client address,
// or a visitor's token) that fails GuessBurst times in a row has its next
// invalid codes answered 429 for GuessWindow, then one attempt per
// GuessWindow.
const (
	GuessBurst  = 5
	GuessWindow = 30 * time.Second
	// guessersMax bounds the guessers remembered; past it the oldest half
	// is forgotten.
	guessersMax = 100_000
	// guessForget is how long after its last failure a guesser starts
	// afresh.
	guessForget = 10 * GuessWindow
)

// Guessers slows those who keep presenting invalid priority codes, each by
// a key the caller chooses (an address, a token's id). The zero value is
// ready to use; it is safe for concurrent use.
type Guessers struct {
	mu    sync.Mutex
	fails map[string]guesses
}

type guesses struct {
	n    int
	last time.Time
}

// Slowed reports whether key must wait before its next attempt.
func (g *Guessers) Slowed(key string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.fails[key]
	return ok && f.n >= GuessBurst && now.Sub(f.last) < GuessWindow
}

// Failed records a failed attempt by key.
func (g *Guessers) Failed(key string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fails == nil {
		g.fails = map[string]guesses{}
	}
	if len(g.fails) >= guessersMax {
		cut := now.Add(-GuessWindow)
		for k, f := range g.fails {
			if f.last.Before(cut) || len(g.fails) >= guessersMax/2 {
				delete(g.fails, k)
			}
		}
	}
	f := g.fails[key]
	if now.Sub(f.last) >= guessForget {
		f.n = 0 // a failure long after the last starts afresh
	}
	g.fails[key] = guesses{n: f.n + 1, last: now}
}

// Succeeded forgets key's failures.
func (g *Guessers) Succeeded(key string) {
	g.mu.Lock()
	delete(g.fails, key)
	g.mu.Unlock()
}
