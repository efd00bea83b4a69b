package visitors

import (
	"testing"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/policy"
)

func TestCountedBefore(t *testing.T) {
	const id = 7
	waiting := policy.Counting{Bucket: 100, LastCheckIn: 6000, Counted: 100, ExpiresAt: 9000}
	later := policy.Counting{Bucket: 100, LastCheckIn: 6030, Counted: 100, ExpiresAt: 9000}
	admitted := policy.Counting{Bucket: 100, AcceptedAt: 6010, LastCheckIn: 6010, Counted: 6010 + 600, ExpiresAt: 9000}
	tokenOf := func(c policy.Counting) cookie.Token {
		tok := cookie.Token{ID: id}
		SetCounting(&tok, c)
		return tok
	}
	tests := []struct {
		name   string
		stored *policy.Counting // nil: no entry
		cookie policy.Counting
		want   policy.Counting
	}{
		{"a token the node has not counted starts from its cookie", nil, waiting, waiting},
		{"a replayed older cookie starts from what the node counted last", &later, waiting, later},
		{"a cookie checked in later than the entry (counted at another node) wins", &waiting, later, later},
		{"an admitted cookie wins over a waiting entry", &waiting, admitted, admitted},
		{"a waiting cookie replayed after the admission starts from the admission", &admitted, waiting, admitted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tab Counted
			sh := tab.Lock(id)
			defer sh.Unlock()
			if tc.stored != nil {
				sh.Put(id, *tc.stored, 6000)
			}
			if got := sh.Before(tokenOf(tc.cookie)); got != tc.want {
				t.Errorf("Before = %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("a token without an id has no shard and is counted from its cookie", func(t *testing.T) {
		var tab Counted
		sh := tab.Lock(0)
		if sh != nil {
			t.Fatal("Lock(0) returned a shard")
		}
		sh.Put(0, later, 6000) // a no-op, not a panic
		tok := tokenOf(waiting)
		tok.ID = 0
		if got := sh.Before(tok); got != waiting {
			t.Errorf("Before = %+v, want the cookie's %+v", got, waiting)
		}
		sh.Unlock()
	})
}

func TestCountedMemoryIsBounded(t *testing.T) {
	t.Run("entries whose cookie and cell have ended are swept as the shard grows", func(t *testing.T) {
		var tab Counted
		sh := tab.Lock(countedShards) // every id below falls in this shard
		defer sh.Unlock()
		ended := policy.Counting{Bucket: 1, LastCheckIn: 60, Counted: 1, ExpiresAt: 120}
		for i := uint64(1); i < minCountSweep; i++ {
			sh.Put(i*countedShards, ended, 100)
		}
		live := policy.Counting{Bucket: 1000, LastCheckIn: 60000, Counted: 1000, ExpiresAt: 70000}
		sh.Put(minCountSweep*countedShards, live, 60000)
		if sh.Len() != 1 {
			t.Errorf("after the sweep the shard holds %d entries, want the one live entry", sh.Len())
		}
	})
	t.Run("past its cap a shard evicts the entries nearest to their end first", func(t *testing.T) {
		var tab Counted
		sh := tab.Lock(countedShards)
		defer sh.Unlock()
		limit := CountedCap / countedShards
		n := uint64(limit + limit/4)
		for i := uint64(1); i <= n; i++ {
			// All live at now=0; entry i ends at second 100000+i.
			sh.Put(i*countedShards, policy.Counting{ExpiresAt: 100000 + int64(i)}, 0)
		}
		if sh.Len() > limit {
			t.Fatalf("the shard holds %d entries, over its cap of %d", sh.Len(), limit)
		}
		newest := cookie.Token{ID: n * countedShards}
		if got := sh.Before(newest); got.ExpiresAt != 100000+int64(n) {
			t.Errorf("the newest entry was evicted")
		}
		if _, ok := sh.m[countedShards]; ok {
			t.Errorf("the oldest entry was kept past the cap")
		}
	})
}

func TestRevoked(t *testing.T) {
	tests := []struct {
		name    string
		steps   func(rs *Revoked) bool
		outcome bool
	}{
		{"a first revocation is new", func(rs *Revoked) bool { return rs.Add("sale", 9, 2000, 1000) }, true},
		{"a second revocation of the same session is not", func(rs *Revoked) bool {
			rs.Add("sale", 9, 2000, 1000)
			return rs.Add("sale", 9, 2000, 1500)
		}, false},
		{"the same session id in another room is another session", func(rs *Revoked) bool {
			rs.Add("sale", 9, 2000, 1000)
			return rs.Add("vip", 9, 2000, 1000) && !rs.Has("other", 9)
		}, true},
		{"a revocation whose token has expired may be made again", func(rs *Revoked) bool {
			rs.Add("sale", 9, 2000, 1000)
			return rs.Add("sale", 9, 4000, 2001)
		}, true},
		{"a session without an id is always new and never held", func(rs *Revoked) bool {
			first := rs.Add("sale", 0, 2000, 1000)
			again := rs.Add("sale", 0, 2000, 1000)
			return first && again && !rs.Has("sale", 0)
		}, true},
		{"a revoked session is held", func(rs *Revoked) bool {
			rs.Add("sale", 9, 2000, 1000)
			return rs.Has("sale", 9) && !rs.Has("sale", 10)
		}, true},
		{"expired revocations are swept as the set grows", func(rs *Revoked) bool {
			for i := uint64(1); i < minRevokedSweep; i++ {
				rs.Add("sale", i, 100, 50)
			}
			rs.Add("sale", minRevokedSweep, 5000, 1000)
			return rs.Len() == 1 && rs.Has("sale", minRevokedSweep)
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rs Revoked
			if got := tc.steps(&rs); got != tc.outcome {
				t.Errorf("got %v, want %v", got, tc.outcome)
			}
		})
	}
}
