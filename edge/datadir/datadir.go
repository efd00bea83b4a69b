// Package datadir keeps a node's files in its data directory: what the ring
// was told (rooms, stops, codes used, webhooks, counts) and the members it
// knew, so that a node, or a whole ring, that stops at once comes back as it
// was. Caddy keeps its admin API's changes in autosave.json, Consul and
// Nomad a data_dir, serf a snapshot of its members; this is the same for a
// waiting room.
//
// A file is written whole or not at all: the bytes go to a temporary file
// in the same directory, which is synced, renamed over the old file, and
// the directory synced, so that a crash at any moment leaves either the
// whole old file or the whole new one. It is sealed (XChaCha20-Poly1305)
// with a key the caller derives from the cookie key, since it holds webhook
// secrets, bound to its name so that one file cannot stand in for another,
// and carries a format version: a file that is truncated, tampered with,
// sealed with a key the node no longer holds or written by a newer version
// opens with a *BadFile error saying which, and the caller sets it aside
// (SetAside) and starts from its config rather than trust it or stop.
package datadir

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// Version is the file format this package writes. A file of a later
// version is refused (BadNewer), never guessed at.
const Version = 1

// magic opens every file, so a stray file is told from a damaged one.
var magic = [4]byte{'W', 'R', 'D', 'D'}

// The header: magic, version, the sealing key's fingerprint, the nonce.
const (
	fingerprintLen = 8
	headerLen      = len(magic) + 1 + fingerprintLen + chacha20poly1305.NonceSizeX
)

// Why a file does not open: the reasons of BadFile, short enough to name a
// set-aside file and label a metric.
const (
	BadTruncated = "truncated" // shorter than its header and seal
	BadNotOurs   = "not_ours"  // does not start as this package's files do
	BadNewer     = "newer"     // written by a later format version
	BadWrongKey  = "wrong_key" // sealed with a key the node does not hold
	BadTampered  = "tampered"  // the seal does not hold: changed or cut short
)

// BadFile is why a file in the data directory cannot be trusted.
type BadFile struct {
	Path   string
	Reason string // one of the Bad... reasons
	Detail string
}

func (e *BadFile) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.Path, e.Detail, e.Reason)
}

// Dir is a node's data directory.
type Dir struct {
	path string
	keys []sealKey // the first seals; every one opens
	// WritePause, for tests only, makes every write wait this long with
	// half of the file's bytes written, so that a test can kill the
	// process inside a write.
	WritePause time.Duration
}

// sealKey is one key the files may be sealed with, and its fingerprint.
type sealKey struct {
	key [chacha20poly1305.KeySize]byte
	fp  [fingerprintLen]byte
}

// Open prepares the data directory at path with the sealing keys: the
// first seals what is written, and each of them opens what was written
// before, so that a file sealed before a key rotation still opens after
// it. A key is 32 bytes. Open touches no file: the directory is created
// (mode 0700) by the first write, so that a directory that cannot be
// created or written is each write's error, which the node counts and
// logs while it goes on serving, never a reason not to start.
func Open(path string, keys [][]byte) (*Dir, error) {
	if path == "" {
		return nil, errors.New("data directory: no path")
	}
	if len(keys) == 0 {
		return nil, errors.New("data directory: no sealing key")
	}
	d := &Dir{path: path}
	for i, k := range keys {
		if len(k) != chacha20poly1305.KeySize {
			return nil, fmt.Errorf("data directory: sealing key %d is %d bytes, want %d", i, len(k), chacha20poly1305.KeySize)
		}
		sk := sealKey{fp: fingerprintOf(k)}
		copy(sk.key[:], k)
		d.keys = append(d.keys, sk)
	}
	return d, nil
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// file is the path of the file named name.
func (d *Dir) file(name string) string { return filepath.Join(d.path, name) }

// additional is what a file's seal covers besides its contents: the header
// and the file's name.
func additional(header []byte, name string) []byte {
	return append(append([]byte(nil), header...), name...)
}

// Seal returns data sealed as the file named name: header, then the
// sealed bytes.
func (d *Dir) Seal(name string, data []byte) ([]byte, error) {
	k := d.keys[0]
	aead, err := chacha20poly1305.NewX(k.key[:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, headerLen, headerLen+len(data)+aead.Overhead())
	copy(out, magic[:])
	out[len(magic)] = Version
	copy(out[len(magic)+1:], k.fp[:])
	nonce := out[len(magic)+1+fingerprintLen : headerLen]
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(out, nonce, data, additional(out[:headerLen], name)), nil
}

// Unseal opens the bytes of the file named name, read from path (for the
// error only).
func (d *Dir) Unseal(name, path string, b []byte) ([]byte, error) {
	bad := func(reason, detail string, args ...any) error {
		return &BadFile{Path: path, Reason: reason, Detail: fmt.Sprintf(detail, args...)}
	}
	if len(b) < len(magic) || !bytes.Equal(b[:len(magic)], magic[:]) {
		if len(b) < len(magic) && bytes.HasPrefix(magic[:], b) {
			return nil, bad(BadTruncated, "%d bytes, shorter than a header", len(b))
		}
		return nil, bad(BadNotOurs, "not a waitroom data file")
	}
	if len(b) < headerLen+chacha20poly1305.Overhead {
		return nil, bad(BadTruncated, "%d bytes, shorter than a header and its seal", len(b))
	}
	if v := b[len(magic)]; v != Version {
		if v > Version {
			return nil, bad(BadNewer, "format version %d, newer than this binary's %d", v, Version)
		}
		return nil, bad(BadNotOurs, "format version %d is not one this binary reads", v)
	}
	fp := b[len(magic)+1 : len(magic)+1+fingerprintLen]
	for _, k := range d.keys {
		if !hmac.Equal(fp, k.fp[:]) {
			continue
		}
		aead, err := chacha20poly1305.NewX(k.key[:])
		if err != nil {
			return nil, err
		}
		nonce := b[len(magic)+1+fingerprintLen : headerLen]
		data, err := aead.Open(nil, nonce, b[headerLen:], additional(b[:headerLen], name))
		if err != nil {
			return nil, bad(BadTampered, "the seal does not hold: changed or cut short")
		}
		return data, nil
	}
	return nil, bad(BadWrongKey, "sealed with a key this node does not hold (a cookie key from before the last rotation but one?)")
}

// Write seals data and writes it as the file named name, whole or not at
// all: a temporary file in the directory, synced, renamed over the old
// one, and the directory synced. The file's mode is 0600.
func (d *Dir) Write(name string, data []byte) error {
	sealed, err := d.Seal(name, data)
	if err != nil {
		return fmt.Errorf("data directory: seal %s: %w", name, err)
	}
	return writeAtomic(d.path, name, sealed, d.WritePause)
}

// writeAtomic writes b as dir/name, whole or not at all; pause is
// Dir.WritePause.
func writeAtomic(dir, name string, b []byte, pause time.Duration) (err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("data directory: write %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("data directory: write %s: %w", name, err)
	}
	half := len(b) / 2
	if pause > 0 {
		if _, err = tmp.Write(b[:half]); err != nil {
			return fmt.Errorf("data directory: write %s: %w", name, err)
		}
		time.Sleep(pause)
		b = b[half:]
	}
	if _, err = tmp.Write(b); err != nil {
		return fmt.Errorf("data directory: write %s: %w", name, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("data directory: sync %s: %w", name, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("data directory: write %s: %w", name, err)
	}
	if err = os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("data directory: replace %s: %w", name, err)
	}
	// The rename is durable only once the directory is.
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("data directory: sync %s: %w", dir, err)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Read opens the file named name. A file that is not there is
// fs.ErrNotExist (a first start); one that cannot be trusted is a
// *BadFile.
func (d *Dir) Read(name string) ([]byte, error) {
	path := d.file(name)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("data directory: read %s: %w", path, err)
	}
	return d.Unseal(name, path, b)
}

// ClearTemporary removes the temporary files of writes of the file named
// name that a crash cut short: they were never the file, and only take
// room. Call it before the node writes again.
func (d *Dir) ClearTemporary(name string) error {
	tmps, err := filepath.Glob(filepath.Join(d.path, "."+name+".tmp-*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range tmps {
		errs = append(errs, os.Remove(t))
	}
	return errors.Join(errs...)
}

// SetAside renames the file named name out of the way, as
// NAME.REASON.UNIXSECONDS in the same directory, and returns the new path:
// a bad file is kept for an operator to look at, never read again, never
// overwritten.
func (d *Dir) SetAside(name, reason string, now time.Time) (string, error) {
	to := d.file(name + "." + reason + "." + strconv.FormatInt(now.Unix(), 10))
	if err := os.Rename(d.file(name), to); err != nil {
		return "", fmt.Errorf("data directory: set aside %s: %w", name, err)
	}
	return to, nil
}

// fingerprintOf is a key's fingerprint: it names the key in a file's
// header without revealing it, so that a file sealed with another key is
// told apart (BadWrongKey) from one that was tampered with.
func fingerprintOf(k []byte) (fp [fingerprintLen]byte) {
	m := hmac.New(sha256.New, k)
	m.Write([]byte("waitroom data directory key fingerprint"))
	copy(fp[:], m.Sum(nil))
	return fp
}
