package policy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// Places across a restart. The order inside an arrival slot is what the
// node saw its slots fill (rank.go): the ring's state holds only the slots'
// counts, so a node that starts again knows where each of its waiting
// visitors came in its slot only if it kept that. Without it, every
// visitor of a slot that filled before the restart was placed by the
// slot's share again: four who came within a second eleven seconds into a
// slot, told 0, 1, 2 and 3 ahead before a crash, were each told 2 after
// it. So a node saves the curves of the slots still waiting with its
// state (SavePlaces) and a chain that starts again takes them back
// (ResumeChain). The curves name no visitor: arrival instants inside
// twenty seconds and counts.

// placesVersion is the first byte of an encoding: a file of another
// version is not taken back. Version 2 adds each other replica's curve of
// a slot; a file of version 1, written before, is still taken back, its
// slots placing the others' gone as the earliest of all the others.
const (
	placesVersion   = 2
	placesVersionV1 = 1
)

// Bounds on a decoded encoding: far above what a node keeps (a slot's
// curve gains a point per allocation at most, four a second for under a
// minute; its own visitors are at most its arrivals), so that a damaged
// file cannot make the node allocate without limit.
const (
	maxPlacesSlots  = 1 << 14
	maxPlacesPoints = 1 << 12
	maxPlacesOwn    = 1 << 22
)

// SavePlaces encodes what the node knows of the order inside the arrival
// slots that still wait, for ResumeChain after a restart. It is nil when
// the node follows no slot (nobody waits), so a node at rest writes
// nothing more.
func (a *Allocation) SavePlaces() []byte {
	if a == nil || a.arr == nil || len(a.arr.slots) == 0 {
		return nil
	}
	c := a.arr
	b := []byte{placesVersion}
	b = binary.AppendVarint(b, c.lastLook)
	b = binary.AppendUvarint(b, uint64(math.Round(min(max(c.proofRate, 0), 1)*1e4)))
	b = binary.AppendUvarint(b, uint64(len(c.slots)))
	for i := range c.slots {
		cv := &c.slots[i]
		b = binary.AppendVarint(b, cv.start)
		partial := byte(0)
		if cv.partial {
			partial = 1
		}
		b = append(b, partial)
		b = appendCurve(b, &cv.curve)
		b = appendSorted(b, cv.own)
		b = appendSorted(b, cv.gone)
		b = binary.AppendUvarint(b, uint64(len(cv.by)))
		for j := range cv.by {
			b = binary.AppendUvarint(b, uint64(cv.by[j].id))
			b = appendCurve(b, &cv.by[j].curve)
		}
	}
	return b
}

// appendCurve appends when the curve was last looked at and its points.
func appendCurve(b []byte, cv *curve) []byte {
	b = binary.AppendVarint(b, int64(cv.seen))
	b = binary.AppendUvarint(b, uint64(len(cv.pts)))
	for _, p := range cv.pts {
		b = binary.AppendVarint(b, int64(p.from))
		b = binary.AppendVarint(b, int64(p.at))
		b = binary.AppendVarint(b, int64(p.n))
	}
	return b
}

// appendSorted appends xs, sorted, as its length and the first value then
// the steps between values.
func appendSorted(b []byte, xs []int32) []byte {
	b = binary.AppendUvarint(b, uint64(len(xs)))
	prev := int64(0)
	for i, x := range xs {
		if i == 0 {
			b = binary.AppendVarint(b, int64(x))
		} else {
			b = binary.AppendUvarint(b, uint64(int64(x)-prev))
		}
		prev = int64(x)
	}
	return b
}

// ResumeChain starts node self's chain for a room again, dividing the
// slots by strategy s, with the order inside its arrival slots that an
// earlier chain saved (SavePlaces): its first allocation places the
// visitors of those slots as the earlier chain did, and takes what was
// counted while the node was down as having come in that time. Empty
// places start the chain afresh (NewChain); places that cannot be read
// return an error, with a fresh chain beside it.
func ResumeChain(self crdt.ReplicaID, s Strategy, places []byte) (Chain, error) {
	c := NewChain(self, s)
	if len(places) == 0 {
		return c, nil
	}
	arr, err := decodePlaces(places)
	if err != nil {
		return c, fmt.Errorf("the order inside the arrival slots: %w", err)
	}
	c.resume = arr
	return c, nil
}

// errPlaces is a malformed encoding of places.
var errPlaces = errors.New("malformed")

// placesReader reads an encoding of places, remembering its first error.
type placesReader struct {
	b   []byte
	err error
}

func (r *placesReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errPlaces, what)
	}
}

func (r *placesReader) varint(what string) int64 { return readVarint(r, what, binary.Varint) }

func (r *placesReader) uvarint(what string) uint64 { return readVarint(r, what, binary.Uvarint) }

// readVarint reads one value with dec (binary.Varint or binary.Uvarint).
func readVarint[T int64 | uint64](r *placesReader, what string, dec func([]byte) (T, int)) T {
	v, n := dec(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// int32 reads a varint that must fit an int32.
func (r *placesReader) int32(what string) int32 {
	v := r.varint(what)
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail(what + " out of range")
		return 0
	}
	return int32(v)
}

// count reads a length of at most limit, and at most the bytes left (each
// element takes one at least).
func (r *placesReader) count(what string, limit int) int {
	v := r.uvarint(what)
	if v > uint64(limit) || v > uint64(len(r.b)) {
		r.fail(what + " too long")
		return 0
	}
	return int(v)
}

// curve reads a curve written by appendCurve into cv, whose tip is set.
func (r *placesReader) curve(cv *curve) {
	cv.seen = r.int32("seen")
	np := r.count("points", maxPlacesPoints)
	cv.pts = make([]curvePoint, 0, np)
	for k := 0; k < np && r.err == nil; k++ {
		p := curvePoint{from: r.int32("point"), at: r.int32("point"), n: r.int32("point")}
		last := int32(0)
		if k > 0 {
			last = cv.pts[k-1].n
			if p.at < cv.pts[k-1].at {
				r.fail("points out of order")
			}
		}
		if p.from > p.at || p.n <= last {
			r.fail("point")
		}
		cv.pts = append(cv.pts, p)
	}
	*cv.tip = len(cv.pts)
}

// sorted reads a list written by appendSorted.
func (r *placesReader) sorted(what string) []int32 {
	n := r.count(what, maxPlacesOwn)
	if n == 0 {
		return nil
	}
	xs := make([]int32, n)
	x := int64(r.int32(what))
	xs[0] = int32(x)
	for i := 1; i < n && r.err == nil; i++ {
		x += int64(min(r.uvarint(what), math.MaxInt32+1))
		if x > math.MaxInt32 {
			r.fail(what + " out of range")
			return nil
		}
		xs[i] = int32(x)
	}
	return xs
}

// decodePlaces reads SavePlaces' encoding, checking what the curves'
// readers take for granted: slots in the order of their starts, points in
// the order they were noted with counts that grew, and arrival lists
// sorted.
func decodePlaces(b []byte) (*arrivalCurves, error) {
	if len(b) == 0 || (b[0] != placesVersion && b[0] != placesVersionV1) {
		return nil, fmt.Errorf("%w: not version %d or %d", errPlaces, placesVersionV1, placesVersion)
	}
	v1 := b[0] == placesVersionV1
	r := &placesReader{b: b[1:]}
	c := &arrivalCurves{lastLook: r.varint("last look")}
	rate := r.uvarint("proof rate")
	if rate == 0 || rate > 1e4 {
		rate = 1e4 // unmeasured: everyone proves, as a new chain takes it
	}
	c.proofRate = float64(rate) / 1e4
	n := r.count("slots", maxPlacesSlots)
	c.slots = make([]slotCurve, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		cv := slotCurve{start: r.varint("slot start"), curve: curve{tip: new(int)}}
		if len(r.b) == 0 {
			r.fail("slot")
			break
		}
		if r.b[0] > 1 {
			r.fail("partial flag")
		}
		cv.partial, r.b = r.b[0] == 1, r.b[1:]
		r.curve(&cv.curve)
		cv.own = r.sorted("own arrivals")
		cv.gone = r.sorted("own let in")
		if v1 {
			cv.noReplicas = true
		} else {
			nr := r.count("replicas", maxPlacesSlots)
			cv.by = make([]replicaCurve, 0, nr)
			for j := 0; j < nr && r.err == nil; j++ {
				rc := replicaCurve{id: crdt.ReplicaID(r.uvarint("replica")), curve: curve{tip: new(int)}}
				if j > 0 && rc.id <= cv.by[j-1].id {
					r.fail("replicas out of order")
				}
				r.curve(&rc.curve)
				cv.by = append(cv.by, rc)
			}
		}
		if i > 0 && cv.start <= c.slots[i-1].start {
			r.fail("slots out of order")
		}
		c.slots = append(c.slots, cv)
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return c, nil
}

// maxResumeAhead is how far ahead of now the curves a chain starts again
// from may have been looked at last: a clock correction steps the ring's
// time back by milliseconds, or by seconds while it converges.
const maxResumeAhead = time.Minute

// resumed is the curves a chain that starts again begins from: the saved
// ones, or the chain's own when the ring's time stepped back, whatever their
// age (noteArrivals drops the slots whose buckets no longer wait), looked at
// last when they were saved, or now if that is later. Curves looked at more
// than maxResumeAhead ahead of now are not this ring's time.
func (c *arrivalCurves) resumed(now time.Time) *arrivalCurves {
	ms := now.UnixMilli()
	if c == nil || c.lastLook > ms+maxResumeAhead.Milliseconds() {
		return nil
	}
	if c.lastLook > ms {
		cp := *c // an allocation's curves are never changed
		cp.lastLook = ms
		return &cp
	}
	return c
}
