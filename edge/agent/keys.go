package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/config"
)

// Environment variables that carry keys when no key file is configured.
const (
	// GossipKeyEnv holds gossip keys: base64, separated by commas, the
	// first one encrypting.
	GossipKeyEnv = "WAITROOM_GOSSIP_KEY"
	// CookieKeysEnv holds cookie keys in the key file format (see package
	// cookie), with ';' allowed in place of newlines.
	CookieKeysEnv = "WAITROOM_COOKIE_KEYS"
)

// maxKeyFileSize bounds what a key file read reads; real ones are a few
// hundred bytes.
const maxKeyFileSize = 1 << 20

// LoadGossipKeys reads memberlist's gossip encryption keys from a file: one
// key per line in standard or URL-safe base64 (padded or not) of 16, 24 or 32
// bytes (AES-128, -192 or -256). Blank lines are ignored, and so is everything
// from a '#' to the end of its line. The first key encrypts; all of them
// decrypt, so a new key can be rolled out before it is put first. Errors
// name the file and line and never echo a key.
func LoadGossipKeys(path string) ([][]byte, error) {
	data, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	keys, err := parseGossipKeys(bytes.Lines(data), "line")
	if err != nil {
		return nil, fmt.Errorf("gossip key file %s: %w", path, err)
	}
	return keys, nil
}

// GossipKeysFromEnv reads gossip keys from $WAITROOM_GOSSIP_KEY: base64 keys
// separated by commas, each as in [LoadGossipKeys]. It returns nil and no
// error when the variable is unset or empty.
func GossipKeysFromEnv() ([][]byte, error) {
	v := os.Getenv(GossipKeyEnv)
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	keys, err := parseGossipKeys(strings.SplitSeq(v, ","), "key")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", GossipKeyEnv, err)
	}
	return keys, nil
}

// parseGossipKeys reads one key per item; unit names an item in errors
// ("line" or "key").
func parseGossipKeys[S ~string | ~[]byte](items func(func(S) bool), unit string) ([][]byte, error) {
	var keys [][]byte
	seen := map[string]int{}
	n := 0
	for item := range items {
		n++
		text := string(item)
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if strings.ContainsAny(text, " \t") {
			return nil, fmt.Errorf("%s %d: want one base64 key, found several words", unit, n)
		}
		key, ok := cookie.DecodeSecret(text)
		if !ok {
			return nil, fmt.Errorf("%s %d: key is not base64", unit, n)
		}
		switch len(key) {
		case 16, 24, 32:
		default:
			return nil, fmt.Errorf("%s %d: key is %d bytes; it must be 16, 24 or 32 bytes (AES-128, AES-192 or AES-256)", unit, n, len(key))
		}
		if prev, dup := seen[string(key)]; dup {
			return nil, fmt.Errorf("%s %d: the same key as %s %d", unit, n, unit, prev)
		}
		seen[string(key)] = n
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("no keys")
	}
	return keys, nil
}

// LoadCookieKeys reads the visitor cookie keys from a key file (the format of
// [cookie.ParseKeys]: "ID BASE64" per line, the first key sealing) and
// returns their keyring. Errors name the file and line and never echo a key.
func LoadCookieKeys(path string) (*cookie.Keyring, error) {
	data, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	ring, err := cookieKeyring(data)
	if err != nil {
		return nil, fmt.Errorf("cookie key file %s: %w", path, err)
	}
	return ring, nil
}

// CookieKeysFromEnv reads the visitor cookie keys from $WAITROOM_COOKIE_KEYS,
// in the key file format with ';' allowed in place of newlines (so "1 KEY;
// 0 OLDKEY" fits on one line; line numbers in errors count ';'-separated
// parts too). It returns nil and no error when the variable is unset or empty.
func CookieKeysFromEnv() (*cookie.Keyring, error) {
	v := os.Getenv(CookieKeysEnv)
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	ring, err := cookieKeyring([]byte(strings.ReplaceAll(v, ";", "\n")))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CookieKeysEnv, err)
	}
	return ring, nil
}

func cookieKeyring(data []byte) (*cookie.Keyring, error) {
	keys, err := cookie.ParseKeys(data)
	if err != nil {
		return nil, err
	}
	return cookie.NewKeyring(keys...)
}

// GossipKeysOf returns the config's gossip encryption keys: from
// gossip_key_file if it is set, else from $WAITROOM_GOSSIP_KEY; the file wins
// if both are given. With neither it returns nil and no error: gossip is then
// not encrypted.
func GossipKeysOf(c *config.Config) ([][]byte, error) {
	if c.GossipKeyFile != "" {
		return LoadGossipKeys(c.GossipKeyFile)
	}
	return GossipKeysFromEnv()
}

// CookieKeysOf returns the config's visitor cookie keyring: from
// cookie_key_file if it is set, else from $WAITROOM_COOKIE_KEYS; the file
// wins if both are given. With neither it is an error: keys made up at
// start-up would send every visitor to the back of the queue when the node
// restarts.
func CookieKeysOf(c *config.Config) (*cookie.Keyring, error) {
	if c.CookieKeyFile != "" {
		return LoadCookieKeys(c.CookieKeyFile)
	}
	ring, err := CookieKeysFromEnv()
	if err != nil {
		return nil, err
	}
	if ring == nil {
		return nil, fmt.Errorf("no cookie keys: set cookie_key_file or $%s (lines of \"ID BASE64\", a key id 0–255 and a 32-byte secret)", CookieKeysEnv)
	}
	return ring, nil
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *fs.PathError names the path
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("key file %s: over %d bytes; is it the right file?", path, maxKeyFileSize)
	}
	return data, nil
}

// KeyFileMode is the mode key files are written with: readable and writable
// by their owner only.
const KeyFileMode fs.FileMode = 0o600

// WriteKeyFile writes a new key file readable by its owner only. It refuses
// to replace an existing file: a replaced cookie key sends every visitor to
// the back of the queue, a replaced gossip key splits the cluster.
func WriteKeyFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, KeyFileMode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("key file %s exists; keygen does not replace keys: remove it first or choose another name", path)
		}
		return err // *fs.PathError names the path
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("key file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("key file %s: %w", path, err)
	}
	return nil
}

// ProtectKeyOutput makes f readable by its owner only when it is a regular
// file, as when a key is printed with "waitroom keygen > cookie.key" (the
// shell creates the file with its umask, usually readable by everyone). It
// reports whether it did; a terminal or a pipe is left alone.
func ProtectKeyOutput(f *os.File) (bool, error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false, nil
	}
	if err := f.Chmod(KeyFileMode); err != nil {
		return false, fmt.Errorf("make %s private: %w", f.Name(), err)
	}
	return true, nil
}

// warnOpenKeyFiles logs a warning for each of the config's key files (cookie
// keys, gossip keys, admin token) that users other than its owner may read:
// anyone who reads the cookie key can mint admitted visitors, the gossip key
// can rewrite the cluster's counts and rooms, the token can change rooms.
// The node still starts; the operator decides.
func warnOpenKeyFiles(cfg *config.Config, log zerolog.Logger) {
	if runtime.GOOS == "windows" {
		return // permission bits there say nothing about who can read
	}
	for _, kf := range []struct{ field, path string }{
		{"cookie_key_file", cfg.CookieKeyFile},
		{"gossip_key_file", cfg.GossipKeyFile},
		{"admin_token_file", cfg.AdminTokenFile},
		{"tls.key_file", cfg.TLS.KeyFile},
	} {
		if kf.path == "" {
			continue
		}
		st, err := os.Stat(kf.path)
		if err != nil {
			continue // reading it reports the problem
		}
		if perm := st.Mode().Perm(); perm&0o077 != 0 {
			log.Warn().Str("field", kf.field).Str("file", kf.path).Str("mode", fmt.Sprintf("%04o", perm)).
				Msgf("key file is readable by other users; make it private with: chmod 600 %s", kf.path)
		}
	}
}

// loadCookieKeys finds the cookie keys: the key file, then the environment,
// then (single node only) a key generated once and kept in the user's config
// directory, so that a restart does not send every visitor to the back of the
// queue.
//
// dry (a config check) keeps no generated key: it only says whether the
// node would start.
func loadCookieKeys(cfg *config.Config, log zerolog.Logger, dry bool) (*cookie.Keyring, error) {
	if cfg.CookieKeyFile != "" || os.Getenv(CookieKeysEnv) != "" {
		return CookieKeysOf(cfg)
	}
	if len(cfg.Rooms) == 0 {
		// No room, no token to seal; any key will do.
		k, err := cookie.GenerateKey(nil, 1)
		if err != nil {
			return nil, err
		}
		return cookie.NewKeyring(k)
	}
	if len(cfg.Seeds) > 0 {
		return nil, errors.New("cookie_key_file: a cluster needs the same cookie key file on every node; create one with 'waitroom keygen > cookie.key' and pass --cookie-key-file")
	}
	if dry {
		k, err := cookie.GenerateKey(nil, 1)
		if err != nil {
			return nil, err
		}
		return cookie.NewKeyring(k)
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("cookie_key_file: none given and no config directory to keep a generated one: %w", err)
	}
	path := filepath.Join(dir, "waitroom", "cookie.key")
	if kr, err := LoadCookieKeys(path); err == nil {
		log.Warn().Str("path", path).Msg("no cookie key file given; using the key generated earlier on this machine")
		return kr, nil
	}
	data, err := cookie.GenerateKeyFile(nil)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cookie_key_file: keep generated key: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("cookie_key_file: keep generated key: %w", err)
	}
	log.Warn().Str("path", path).Msg("no cookie key file given; generated one and kept it for restarts (a cluster needs the same file on every node)")
	return LoadCookieKeys(path)
}

// loadAdminToken reads the admin token file: its first non-empty line.
func loadAdminToken(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("admin_token_file: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			if len(t) < 16 {
				return nil, fmt.Errorf("admin_token_file %s: the token is %d characters; use at least 16 (e.g. openssl rand -hex 32)", path, len(t))
			}
			return []byte(t), nil
		}
	}
	return nil, fmt.Errorf("admin_token_file %s: no token in it", path)
}
