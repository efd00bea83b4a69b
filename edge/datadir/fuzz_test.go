package datadir

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzUnseal feeds arbitrary bytes to Unseal, as a damaged or hostile file
// would be: it must never panic, and it returns either the contents of a
// file this key sealed under this name or a *BadFile.
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
		data, err := d.Unseal("state", "state", b)
		if err != nil {
			var bad *BadFile
			if !errors.As(err, &bad) {
				t.Fatalf("error %v is not a BadFile", err)
			}
			return
		}
		if !bytes.Equal(b, good) && len(b) == len(good) && bytes.Equal(data, []byte("contents")) && !bytes.Equal(b[headerLen:], good[headerLen:]) {
			t.Fatalf("a changed file opened")
		}
	})
}
