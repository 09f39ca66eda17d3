package access

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
)

// SecretSuffix names the widget key secret's file: the keys file's name
// with this added.
const SecretSuffix = ".secret"

// Keys is the keys file as last read: Reload reads it again (on SIGHUP)
// and swaps the set in at once, so that requests in flight and open
// connections keep going and the next request sees the new keys.
type Keys struct {
	path string
	cur  atomic.Pointer[Set]
}

// Open reads the keys file at path and the secret beside it, creating
// the secret (32 random bytes, hex, mode 0600) when there is none.
func Open(path string) (*Keys, error) {
	k := &Keys{path: path}
	if err := k.Reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// Reload reads the files again; on an error the keys in use stay.
func (k *Keys) Reload() error {
	secret, err := readSecret(k.path + SecretSuffix)
	if err != nil {
		return err
	}
	f, err := os.Open(k.path)
	if err != nil {
		return fmt.Errorf("API_KEYS_FILE: %w", err)
	}
	defer f.Close()
	s, err := Parse(f, secret)
	if err != nil {
		return fmt.Errorf("API_KEYS_FILE %s: %w", k.path, err)
	}
	k.cur.Store(s)
	return nil
}

// Current is the set in use.
func (k *Keys) Current() *Set { return k.cur.Load() }

// Lookup is Current().Lookup.
func (k *Keys) Lookup(key string) (Grant, error) { return k.cur.Load().Lookup(key) }

// readSecret reads the widget key secret, making one when the file does
// not exist. O_EXCL: of processes starting together over one shared
// directory, one writes it and the others read that one.
func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createSecret(path); err != nil {
			return nil, err
		}
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("widget key secret: %w", err)
	}
	secret, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil || len(secret) < 32 {
		return nil, fmt.Errorf("widget key secret %s: want at least 64 hex digits (32 bytes)", path)
	}
	return secret, nil
}

// createSecret writes a new secret to path unless a file is there.
func createSecret(path string) error {
	var s [32]byte
	if _, err := rand.Read(s[:]); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		_, werr := f.WriteString(hex.EncodeToString(s[:]) + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("widget key secret %s: %w", path, werr)
		}
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("widget key secret %s: cannot create it (%w); write 64 hex digits there, e.g. with `head -c 32 /dev/urandom | xxd -p -c 64`", path, err)
	}
	return nil
}
