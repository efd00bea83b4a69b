package gossip

import (
	"fmt"

	"github.com/waitroom/waitroom/crdt"
)

// maxMarkID bounds a mark's id: a namespaced code or notice id is well
// under it.
const maxMarkID = 256

type wireMark struct {
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
	_msgpack struct{} `msgpack:",as_array"`
	ID       string
	Expires  int64
}

type wireMarks struct {
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
	_msgpack struct{} `msgpack:",as_array"`
	Horizon  int64
	Marks    []wireMark
}

func validMark(m crdt.Mark) bool {
	return m.ID != "" && len(m.ID) <= maxMarkID && m.Expires > 0
}

// EncodeMarks encodes a batch of marks with the sender's horizon, as a
// broadcast of new marks or the whole set for a joining peer.
func EncodeMarks(ms []crdt.Mark, horizon int64) ([]byte, error) {
	w := wireMarks{Horizon: horizon, Marks: make([]wireMark, len(ms))}
	for i, m := range ms {
		w.Marks[i] = wireMark{ID: m.ID, Expires: m.Expires}
	}
	return encode(msgMarks, w)
}

// decodeMarks fills m from the body of a marks message, checking every mark.
func (m *Message) decodeMarks(body []byte) error {
	w, err := decodeBody(body, (*reader).marks)
	if err != nil {
		return err
	}
	if w.Marks == nil {
		return fmt.Errorf("%w: nil mark list", errMalformed)
	}
	if w.Horizon < 0 {
		return fmt.Errorf("%w: negative horizon %d", errValidation, w.Horizon)
	}
	m.Horizon = w.Horizon
	m.Marks = make([]crdt.Mark, len(w.Marks))
	for i, x := range w.Marks {
		mk := crdt.Mark{ID: x.ID, Expires: x.Expires}
		if !validMark(mk) {
			return fmt.Errorf("%w: mark %d", errValidation, i)
		}
		m.Marks[i] = mk
	}
	return nil
}

// marks reads [horizon, [[id, expires]...]].
func (r *reader) marks() (w wireMarks, err error) {
	if err = r.array(2); err != nil {
		return w, err
	}
	if w.Horizon, err = r.dec.DecodeInt64(); err != nil {
		return w, fmt.Errorf("horizon: %w", err)
	}
	w.Marks, err = list(r, 3, r.mark)
	return w, err
}

// mark reads [id, expires].
func (r *reader) mark() (w wireMark, err error) {
	if err = r.array(2); err != nil {
		return w, err
	}
	if w.ID, err = r.str(); err != nil {
		return w, err
	}
	w.Expires, err = r.dec.DecodeInt64()
	return w, err
}
