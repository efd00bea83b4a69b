package edge

import "testing"

func TestPlacesTakenBackAreKeptOnlyForRoomsInForce(t *testing.T) {
	s := &Server{places: map[string][]byte{"shop": {1, 2}, "deleted": {1, 3}}}
	s.table.Store(&roomTable{rooms: map[string]*room{"shop": {name: "shop"}}})
	got := s.Places()
	t.Run("a room in force that has not allocated yet keeps what it took back", func(t *testing.T) {
		if len(got["shop"]) != 2 {
			t.Errorf("shop: %v", got["shop"])
		}
	})
	t.Run("a room deleted meanwhile keeps nothing", func(t *testing.T) {
		if _, ok := got["deleted"]; ok {
			t.Error("the deleted room's places are saved again")
		}
	})
}
