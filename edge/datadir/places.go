package datadir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// PlacesFile is the name of the data directory's second file: what the
// node alone knows of the order inside its rooms' arrival slots (see
// policy.Allocation.SavePlaces), which the ring's state does not hold.
const PlacesFile = "places"

// placesFormat is the first byte of an encoded places file.
const placesFormat = 1

// maxRoomName bounds a room's name in a places file: far above what a
// config accepts, so a damaged length is refused rather than read.
const maxRoomName = 1 << 10

// ErrPlaces is a places file that cannot be read.
var ErrPlaces = errors.New("malformed places file")

// EncodePlaces encodes each room's saved places, by room name, in the
// order of the names (the same map always encodes the same, so the saver
// writes only what changed). Rooms without places are left out.
func EncodePlaces(rooms map[string][]byte) []byte {
	b := []byte{placesFormat}
	for _, name := range slices.Sorted(maps.Keys(rooms)) {
		if len(rooms[name]) == 0 {
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(len(rooms[name])))
		b = append(b, rooms[name]...)
	}
	return b
}

// DecodePlaces reads EncodePlaces' encoding. What each room's places say
// is the policy's to read (policy.ResumeChain); this reads which bytes are
// whose.
func DecodePlaces(b []byte) (map[string][]byte, error) {
	if len(b) == 0 || b[0] != placesFormat {
		return nil, fmt.Errorf("%w: not format %d", ErrPlaces, placesFormat)
	}
	b = b[1:]
	rooms := map[string][]byte{}
	field := func(what string, limit uint64) ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n == 0 || n > limit || n > uint64(len(b)-k) {
			return nil, fmt.Errorf("%w: %s at byte %d", ErrPlaces, what, len(b))
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	for len(b) > 0 {
		name, err := field("a room's name", maxRoomName)
		if err != nil {
			return nil, err
		}
		places, err := field("a room's places", uint64(len(b)))
		if err != nil {
			return nil, err
		}
		if _, dup := rooms[string(name)]; dup {
			return nil, fmt.Errorf("%w: room %q twice", ErrPlaces, name)
		}
		rooms[string(name)] = slices.Clone(places)
	}
	return rooms, nil
}
