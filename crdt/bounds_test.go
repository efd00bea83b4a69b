package crdt_test

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/crdt"
)

// nowMs is a wall clock in milliseconds at the start of minute base+10.
const nowMs = (base + 10) * 60_000

func TestHLCNeverWraps(t *testing.T) {
	tests := []struct {
		name string
		last crdt.HLC
		now  int64
		want crdt.HLC
	}{
		{"the largest stamp stays the largest", crdt.MaxHLC, 0, crdt.MaxHLC},
		{"the largest stamp stays the largest whatever the wall clock says", crdt.MaxHLC, math.MaxInt64, crdt.MaxHLC},
		{"the last millisecond still raises its logical counter", crdt.HLC{Wall: math.MaxInt64, Logical: 7}, 0, crdt.HLC{Wall: math.MaxInt64, Logical: 8}},
		{"a spent logical counter before the last millisecond moves on", crdt.HLC{Wall: math.MaxInt64 - 1, Logical: math.MaxUint32}, 0, crdt.HLC{Wall: math.MaxInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.last.Next(tt.now)
			if got != tt.want {
				t.Errorf("Next(%d) after %+v = %+v, want %+v", tt.now, tt.last, got, tt.want)
			}
			if got.Less(tt.last) {
				t.Errorf("Next(%d) = %+v went back before %+v", tt.now, got, tt.last)
			}
		})
	}
}

func TestHLCNextWithin(t *testing.T) {
	ahead := crdt.MaxClockOffset.Milliseconds()
	tests := []struct {
		name string
		last crdt.HLC
		want crdt.HLC
	}{
		{"a last stamp behind the clock gives the clock", crdt.HLC{Wall: nowMs - 5}, crdt.HLC{Wall: nowMs}},
		{"a last stamp ahead within the bound is followed", crdt.HLC{Wall: nowMs + 1000, Logical: 2}, crdt.HLC{Wall: nowMs + 1000, Logical: 3}},
		{"a last stamp beyond the bound is passed over", crdt.HLC{Wall: nowMs + ahead + 1}, crdt.HLC{Wall: nowMs}},
		{"the largest stamp is passed over", crdt.MaxHLC, crdt.HLC{Wall: nowMs}},
		{"a stamp at the bound with a spent counter stays at the bound", crdt.HLC{Wall: nowMs + ahead, Logical: math.MaxUint32}, crdt.HLC{Wall: nowMs + ahead, Logical: math.MaxUint32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.last.NextWithin(nowMs, ahead); got != tt.want {
				t.Errorf("NextWithin after %+v = %+v, want %+v", tt.last, got, tt.want)
			}
		})
	}
}

func TestCheckEntry(t *testing.T) {
	lead := int64(crdt.MaxClockOffset.Minutes())
	entry := func(kind crdt.Kind, minute int64, v uint64) crdt.Entry {
		return crdt.Entry{Key: crdt.Key{Room: "tickets", Kind: kind, Minute: minute}, Replica: nodeA, Value: v}
	}
	tests := []struct {
		name   string
		e      crdt.Entry
		reason string // "" when accepted
	}{
		{"an entry of the current minute is taken", entry(crdt.ActivePlus, base+10, 3), ""},
		{"an entry from a clock ahead by the allowed offset is taken", entry(crdt.Admitted, base+10+lead, 1), ""},
		{"an entry a minute past the allowed offset is refused", entry(crdt.ActivePlus, base+11+lead, 1), crdt.RefusedFutureMinute},
		{"an entry dated at the largest minute is refused", entry(crdt.Arrivals, math.MaxInt64, 1), crdt.RefusedFutureMinute},
		{"a session cell dated by an expiry at the longest session is taken", entry(crdt.SessionPlus, base+10+lead+crdt.MaxSessionLead, 1), ""},
		{"a session minus cell at the longest session is taken", entry(crdt.SessionMinus, base+10+lead+crdt.MaxSessionLead, 1), ""},
		{"a session cell beyond the longest session is refused", entry(crdt.SessionPlus, base+11+lead+crdt.MaxSessionLead, 1), crdt.RefusedFutureMinute},
		{"an active cell is not given the session lead", entry(crdt.ActivePlus, base+10+crdt.MaxSessionLead, 1), crdt.RefusedFutureMinute},
		{"an old entry is taken (pruning deals with it)", entry(crdt.Admitted, base-100, 1), ""},
		{"the largest possible count is taken", entry(crdt.ActivePlus, base+10, crdt.MaxEntryValue), ""},
		{"a count no node could make in a minute is refused", entry(crdt.ActivePlus, base+10, crdt.MaxEntryValue+1), crdt.RefusedImpossibleValue},
		{"a count of a million million is refused", entry(crdt.Admitted, base+10, 1e12), crdt.RefusedImpossibleValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := crdt.CheckEntry(tt.e, nowMs)
			var oob *crdt.OutOfBounds
			switch {
			case tt.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.reason != "" && !errors.As(err, &oob):
				t.Fatalf("taken (err %v), want refused as %s", err, tt.reason)
			case tt.reason != "" && oob.Reason != tt.reason:
				t.Fatalf("refused as %s (%v), want %s", oob.Reason, err, tt.reason)
			}
		})
	}
}

func TestCheckStamp(t *testing.T) {
	ahead := crdt.MaxClockOffset.Milliseconds()
	tests := []struct {
		name  string
		stamp crdt.HLC
		ok    bool
	}{
		{"a stamp of now is taken", crdt.HLC{Wall: nowMs}, true},
		{"a stamp from the past is taken", crdt.HLC{Wall: 1}, true},
		{"a stamp ahead by the allowed offset is taken", crdt.HLC{Wall: nowMs + ahead, Logical: math.MaxUint32}, true},
		{"a stamp a millisecond past the offset is refused", crdt.HLC{Wall: nowMs + ahead + 1}, false},
		{"the largest stamp is refused", crdt.MaxHLC, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := crdt.CheckStamp(tt.stamp, nowMs)
			var oob *crdt.OutOfBounds
			if tt.ok != (err == nil) || (err != nil && (!errors.As(err, &oob) || oob.Reason != crdt.RefusedFutureStamp)) {
				t.Fatalf("CheckStamp(%+v) = %v, want ok=%v", tt.stamp, err, tt.ok)
			}
		})
	}
}

func TestNoStampLocksARegister(t *testing.T) {
	locked := crdt.RegisterEntry{Name: "room/tickets", Reg: crdt.LWW[[]byte]{Value: []byte("hostile"), Stamp: crdt.MaxHLC, Replica: nodeB}}

	t.Run("a local write after the largest stamp wins and is stamped within the bound", func(t *testing.T) {
		s := crdt.New()
		s.ApplyRegister(locked) // kept from before such stamps were refused
		e := s.SetRegister("room/tickets", []byte("operator"), nodeA, nowMs)
		if err := crdt.CheckStamp(e.Reg.Stamp, nowMs); err != nil {
			t.Fatalf("the write's stamp %+v would be refused by peers: %v", e.Reg.Stamp, err)
		}
		if r, _ := s.Register("room/tickets"); string(r.Value) != "operator" {
			t.Fatalf("register %q, want the operator's write", r.Value)
		}
	})

	t.Run("a peer holding the largest stamp takes the operator's write", func(t *testing.T) {
		peer, op := crdt.New(), crdt.New()
		peer.ApplyRegister(locked)
		op.ApplyRegister(locked)
		e := op.SetRegister("room/tickets", []byte("operator"), nodeA, nowMs)
		if changed := peer.MergeAt(crdt.Delta{Registers: []crdt.RegisterEntry{e}}, nowMs+500); len(changed.Registers) != 1 {
			t.Fatal("the peer kept the locked register")
		}
		if r, _ := peer.Register("room/tickets"); string(r.Value) != "operator" {
			t.Fatalf("peer holds %q, want the operator's write", r.Value)
		}
		// And the next writes on the peer go on from the sane clock.
		e2 := peer.SetRegister("room/other", []byte("x"), nodeB, nowMs+600)
		if err := crdt.CheckStamp(e2.Reg.Stamp, nowMs+600); err != nil {
			t.Fatalf("the peer's next stamp %+v is out of bounds: %v", e2.Reg.Stamp, err)
		}
	})

	t.Run("a write in the same millisecond as a peer's write ahead of us still wins", func(t *testing.T) {
		s := crdt.New()
		s.ApplyRegister(locked)
		ahead := crdt.RegisterEntry{Name: "room/tickets", Reg: crdt.LWW[[]byte]{Value: []byte("peer"), Stamp: crdt.HLC{Wall: nowMs + 5000}, Replica: nodeB}}
		if !s.ApplyRegisterAt(ahead, nowMs) {
			t.Fatal("a write within the bound did not replace the locked register")
		}
		e := s.SetRegister("room/tickets", []byte("operator"), nodeA, nowMs)
		if !ahead.Reg.Stamp.Less(e.Reg.Stamp) {
			t.Fatalf("stamp %+v is not after the peer's %+v", e.Reg.Stamp, ahead.Reg.Stamp)
		}
	})

	t.Run("MergeAt does not take a register beyond the bound", func(t *testing.T) {
		s := crdt.New()
		if changed := s.MergeAt(crdt.Delta{Registers: []crdt.RegisterEntry{locked}}, nowMs); !changed.Empty() {
			t.Fatal("took a register stamped at the largest stamp")
		}
		if _, ok := s.Register("room/tickets"); ok {
			t.Fatal("the register is stored")
		}
	})
}

func TestDropFuture(t *testing.T) {
	s := crdt.New()
	lead := int64(crdt.MaxClockOffset.Minutes())
	keep := []crdt.Key{
		{Room: "tickets", Kind: crdt.ActivePlus, Minute: base + 10},
		{Room: "tickets", Kind: crdt.SessionPlus, Minute: base + 10 + lead + crdt.MaxSessionLead},
	}
	drop := []crdt.Key{
		{Room: "tickets", Kind: crdt.ActivePlus, Minute: math.MaxInt64},
		{Room: "vaccine", Kind: crdt.SessionMinus, Minute: base + 11 + lead + crdt.MaxSessionLead},
	}
	for _, k := range append(append([]crdt.Key(nil), keep...), drop...) {
		s.Add(k, nodeA, 1_000_000)
	}
	if got := s.DropFuture(nowMs); got != len(drop) {
		t.Fatalf("dropped %d cells, want %d", got, len(drop))
	}
	for _, k := range keep {
		if s.Value(k) == 0 {
			t.Errorf("dropped %+v, which a peer may write", k)
		}
	}
	for _, k := range drop {
		if s.Value(k) != 0 {
			t.Errorf("kept %+v", k)
		}
	}
	if rooms := s.Rooms(); len(rooms) != 1 || rooms[0] != "tickets" {
		t.Errorf("rooms %v, want the emptied room gone", rooms)
	}
}

// Within the bounds, MergeAt is Merge: every law of the state holds for it.
func TestMergeAtInBoundsIsMerge(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		c := drawCluster(t, 3, false)
		var all crdt.Delta
		for _, s := range c.states {
			d := s.Full()
			all.Entries = append(all.Entries, d.Entries...)
			all.Registers = append(all.Registers, d.Registers...)
		}
		got, want := crdt.New(), crdt.New()
		got.MergeAt(crdt.Delta{Entries: drawDelivery(t, all.Entries, "entries"), Registers: drawDelivery(t, all.Registers, "registers")}, 1000)
		want.Merge(all)
		requireEqual(t, "MergeAt", got, want)
	})
}
