package datadir

import (
	"errors"
	"testing"
)

// FuzzUnseal feeds arbitrary bytes to Unseal, as a damaged or hostile file
// would be: it must never panic, and whatever does not open is a *BadFile
// (what opens is what the seal vouches for).
//
//	go test -run '^$' -fuzz '^FuzzUnseal$' -fuzztime 30s ./edge/datadir/
func FuzzUnseal(f *testing.F) {
	d, err := Open(f.TempDir(), [][]byte{key(1), key(2)})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := d.Seal("state", []byte("contents"))
	f.Add(good)
	f.Add(good[:headerLen])
	f.Add([]byte("WRDD"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := d.Unseal("state", "state", b)
		var bad *BadFile
		if err != nil && !errors.As(err, &bad) {
			t.Fatalf("error %v is not a BadFile", err)
		}
	})
}
