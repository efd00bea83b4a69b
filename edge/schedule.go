package edge

// A room's events on the request path: the pre-queue's shuffle. Which event
// governs a time, and the settings in force then, are the configuration's
// (config.Room.At and config.Room.Effective).

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/waitroom/waitroom/edge/config"
)

// shuffledBucket gives a pre-queued visitor its place once the event starts
// with shuffle_at_event_start: an arrival bucket drawn from the visitor's
// random id, keyed with secret, spread over the pre-queue's minutes. Every
// node computes the same bucket for the same visitor (the secret is the
// cluster's cookie key, which every node holds and visitors cannot read), so
// the order needs no coordination; and because it depends only on the id,
// applying it again changes nothing.
func shuffledBucket(secret []byte, room string, e *config.Event, id uint64) int64 {
	first := e.PrequeueStart().Unix() / 60
	last := e.EventStartTime.Unix()/60 - 1
	if last < first {
		return first
	}
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "shuffle|%s|%s|%d|", room, e.ID, e.EventStartTime.Unix())
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], id)
	mac.Write(b[:])
	sum := mac.Sum(nil)
	u := binary.BigEndian.Uint64(sum[:8])
	return first + int64(u%uint64(last-first+1))
}
