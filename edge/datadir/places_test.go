package datadir_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/waitroom/waitroom/edge/datadir"
)

func TestAPlacesFileGivesEachRoomItsOwnBytes(t *testing.T) {
	rooms := map[string][]byte{"shop": {1, 2, 3}, "tickets": {1, 9}, "quiet": nil}
	got, err := datadir.DecodePlaces(datadir.EncodePlaces(rooms))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("every room with places is read back with its bytes", func(t *testing.T) {
		if len(got) != 2 || !bytes.Equal(got["shop"], rooms["shop"]) || !bytes.Equal(got["tickets"], rooms["tickets"]) {
			t.Errorf("read back %v, want shop and tickets of %v", got, rooms)
		}
	})
	t.Run("a room without places is left out", func(t *testing.T) {
		if _, ok := got["quiet"]; ok {
			t.Error("quiet is in the file")
		}
	})
	t.Run("the same rooms always encode the same", func(t *testing.T) {
		if !bytes.Equal(datadir.EncodePlaces(rooms), datadir.EncodePlaces(map[string][]byte{"tickets": {1, 9}, "shop": {1, 2, 3}})) {
			t.Error("two encodings of the same rooms differ: the saver would write at rest")
		}
	})
}

func TestAPlacesFileThatCannotBeReadIsRefused(t *testing.T) {
	good := datadir.EncodePlaces(map[string][]byte{"shop": {1, 2, 3}})
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"of another format", append([]byte{7}, good[1:]...)},
		{"cut short", good[:len(good)-1]},
		{"with a room named twice", append(append([]byte{}, good...), good[1:]...)},
		{"with a length past its end", []byte{1, 0xff, 0xff, 0xff, 0x0f}},
	}
	for _, tt := range tests {
		t.Run("a file "+tt.name+" is refused", func(t *testing.T) {
			if _, err := datadir.DecodePlaces(tt.b); !errors.Is(err, datadir.ErrPlaces) {
				t.Errorf("err %v, want ErrPlaces", err)
			}
		})
	}
}

// FuzzDecodePlaces reads arbitrary bytes as a places file: never a panic,
// and what is read encodes back to the same bytes.
func FuzzDecodePlaces(f *testing.F) {
	f.Add(datadir.EncodePlaces(map[string][]byte{"shop": {1, 2, 3}, "b": {4}}))
	f.Add([]byte{1, 1, 'a', 0})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		rooms, err := datadir.DecodePlaces(b)
		if err != nil {
			return
		}
		if again := datadir.EncodePlaces(rooms); !bytes.Equal(again, b) {
			// Only names out of order may encode otherwise; the rooms
			// must read back the same.
			back, err := datadir.DecodePlaces(again)
			if err != nil || len(back) != len(rooms) {
				t.Fatalf("re-encoded file reads %v, %v; want %v", back, err, rooms)
			}
		}
	})
}
