// Package access decides who may use an instance: the API keys of
// API_KEYS_FILE, each naming a consumer with limits of its own, and the
// read-only widget keys a consumer mints for some channels.
//
// The file holds one consumer a line:
//
//	# name  key hash                                                               limits (optional)
//	dash    sha256:5e88489...                                                      rpm=600 origin_rpm=60 streams=32
//
// Only the SHA-256 of a key is stored. A key presented is hashed and
// looked up by its hash: what a lookup's timing could tell depends on the
// hash, which an attacker cannot steer toward a stored one (finding a key
// with a chosen hash prefix is a preimage search), so the comparison of
// the secret itself takes no part in it. Widget keys are compared by
// hmac.Equal, in constant time.
//
// A widget key is "tmw_" + base64url(consumer ":" channels) + "." +
// base64url(HMAC-SHA256(k, that payload)), where k is
// HMAC-SHA256(secret, "widget\x00" + the consumer's key hash) and secret
// is 32 random bytes kept in a file beside the keys file (its name plus
// ".secret"). It reads nothing but its channels, is charged to the
// consumer that minted it, and stops working when that consumer's line is
// removed or its key replaced, or when the secret file is replaced.
package access

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Prefixes of the two kinds of key.
const (
	keyPrefix    = "tmf_"
	widgetPrefix = "tmw_"
)

// Errors of Lookup. Neither says which part of a key was wrong.
var (
	// ErrNoKey: the request carries no key.
	ErrNoKey = errors.New("an API key is required: send it as Authorization: Bearer <key>, X-API-Key: <key> or ?key=<key>")
	// ErrUnknownKey: the key is not one of the file's, or a widget key
	// that does not verify.
	ErrUnknownKey = errors.New("the API key is not valid")
)

// Consumer is one line of the keys file. Zero limits mean the process's
// own (RATE_LIMIT_RPM, CLIENT_ORIGIN_RPM, STREAMS_PER_CLIENT).
type Consumer struct {
	Name      string
	RPM       int // requests a minute
	OriginRPM int // origin fetches a minute
	Streams   int // streams open at once
	hash      [sha256.Size]byte
	widget    []byte // the HMAC key of its widget keys
}

// Grant is what a key lets a request do: act as Consumer, on any channel
// (Channels nil) or on the widget key's Channels only.
type Grant struct {
	Consumer *Consumer
	Channels []string // sorted, lower-cased; nil: any channel
}

// Widget reports whether the grant is a widget key's.
func (g Grant) Widget() bool { return g.Channels != nil }

// Allows reports whether the grant may read channel (lower-cased).
func (g Grant) Allows(channel string) bool {
	if g.Channels == nil {
		return true
	}
	_, ok := slices.BinarySearch(g.Channels, channel)
	return ok
}

// Set is the consumers of one reading of the keys file.
type Set struct {
	byHash map[[sha256.Size]byte]*Consumer
	byName map[string]*Consumer
}

// Parse reads a keys file. secret signs the widget keys (see the package
// comment); it must be at least 32 bytes. Errors name the line.
func Parse(r io.Reader, secret []byte) (*Set, error) {
	if len(secret) < 32 {
		return nil, errors.New("access: the widget key secret must be at least 32 bytes")
	}
	s := &Set{byHash: map[[sha256.Size]byte]*Consumer{}, byName: map[string]*Consumer{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		c, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := s.byName[c.Name]; dup {
			return nil, fmt.Errorf("line %d: consumer %q is named twice", n, c.Name)
		}
		if other, dup := s.byHash[c.hash]; dup {
			return nil, fmt.Errorf("line %d: %q has the key of %q", n, c.Name, other.Name)
		}
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("widget\x00"))
		m.Write(c.hash[:])
		c.widget = m.Sum(nil)
		s.byName[c.Name], s.byHash[c.hash] = c, c
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// Len is the number of consumers.
func (s *Set) Len() int { return len(s.byName) }

// Names lists the consumers, sorted: the values their metrics' label takes.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Consumer is the consumer named name, or nil.
func (s *Set) Consumer(name string) *Consumer { return s.byName[name] }

// Lookup finds the grant of key: ErrNoKey for "", ErrUnknownKey for a
// key that is neither a consumer's nor a valid widget key.
func (s *Set) Lookup(key string) (Grant, error) {
	if key == "" {
		return Grant{}, ErrNoKey
	}
	if strings.HasPrefix(key, widgetPrefix) {
		return s.lookupWidget(key[len(widgetPrefix):])
	}
	if c := s.byHash[sha256.Sum256([]byte(key))]; c != nil {
		return Grant{Consumer: c}, nil
	}
	return Grant{}, ErrUnknownKey
}

func (s *Set) lookupWidget(token string) (Grant, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok {
		return Grant{}, ErrUnknownKey
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return Grant{}, ErrUnknownKey
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Grant{}, ErrUnknownKey
	}
	name, list, ok := strings.Cut(string(payload), ":")
	c := s.byName[name]
	if !ok || c == nil || !hmac.Equal(mac, sign(c, payload)) {
		return Grant{}, ErrUnknownKey
	}
	channels := strings.Split(list, ",")
	if list == "" || !slices.IsSorted(channels) {
		return Grant{}, ErrUnknownKey // not one this package minted
	}
	return Grant{Consumer: c, Channels: channels}, nil
}

// MintWidget returns a widget key of c's that reads channels (validated,
// lower-cased names) and nothing else.
func (s *Set) MintWidget(c *Consumer, channels []string) (string, error) {
	if c == nil || s.byName[c.Name] != c {
		return "", errors.New("access: a widget key is minted by a consumer of the current keys")
	}
	if len(channels) == 0 {
		return "", errors.New("access: a widget key needs at least one channel")
	}
	chs := slices.Clone(channels)
	slices.Sort(chs)
	chs = slices.Compact(chs)
	payload := []byte(c.Name + ":" + strings.Join(chs, ","))
	return widgetPrefix + base64.RawURLEncoding.EncodeToString(payload) + "." +
		base64.RawURLEncoding.EncodeToString(sign(c, payload)), nil
}

func sign(c *Consumer, payload []byte) []byte {
	m := hmac.New(sha256.New, c.widget)
	m.Write(payload)
	return m.Sum(nil)
}

// Limits are a consumer's own limits, as the keys file and
// `tmefeed keys add` write them: rpm=N origin_rpm=N streams=N.
type Limits struct{ RPM, OriginRPM, Streams int }

// ParseLimits reads limit fields ("rpm=600"); each at most once.
func ParseLimits(fields []string) (Limits, error) {
	var l Limits
	seen := map[string]bool{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || n > 1_000_000 {
			return Limits{}, fmt.Errorf("%q: want rpm=N, origin_rpm=N or streams=N with N a whole number up to 1000000 (0 = the server's setting)", f)
		}
		if seen[k] {
			return Limits{}, fmt.Errorf("%q: %s is given twice", f, k)
		}
		seen[k] = true
		switch k {
		case "rpm":
			l.RPM = n
		case "origin_rpm":
			l.OriginRPM = n
		case "streams":
			l.Streams = n
		default:
			return Limits{}, fmt.Errorf("%q: unknown limit %q; want rpm, origin_rpm or streams", f, k)
		}
	}
	return l, nil
}

func (l Limits) String() string {
	var b strings.Builder
	for _, f := range []struct {
		name string
		n    int
	}{{"rpm", l.RPM}, {"origin_rpm", l.OriginRPM}, {"streams", l.Streams}} {
		if f.n > 0 {
			b.WriteString(" " + f.name + "=" + strconv.Itoa(f.n))
		}
	}
	return b.String()
}

// ValidName reports whether name may name a consumer: 1 to 64 of
// [A-Za-z0-9._-]. It labels metrics and logs, so it is kept plain.
func ValidName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func parseLine(line string) (*Consumer, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return nil, errors.New("want a name, the key's hash (sha256:<64 hex digits>) and optional limits rpm=N origin_rpm=N streams=N")
	}
	if !ValidName(f[0]) {
		return nil, fmt.Errorf("name %q: want 1 to 64 letters, digits, '.', '_' or '-'", f[0])
	}
	h, ok := strings.CutPrefix(f[1], "sha256:")
	b, err := hex.DecodeString(h)
	if !ok || err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("%s: the key's hash must be sha256:<64 hex digits>, as `tmefeed keys add` writes it", f[0])
	}
	l, err := ParseLimits(f[2:])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f[0], err)
	}
	c := &Consumer{Name: f[0], RPM: l.RPM, OriginRPM: l.OriginRPM, Streams: l.Streams}
	copy(c.hash[:], b)
	return c, nil
}

// NewKey mints a key for a consumer: the key itself (shown once, never
// stored) and its line for the keys file.
func NewKey(name string, l Limits) (key, line string, err error) {
	if !ValidName(name) {
		return "", "", fmt.Errorf("name %q: want 1 to 64 letters, digits, '.', '_' or '-'", name)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	key = keyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(key))
	return key, name + " sha256:" + hex.EncodeToString(sum[:]) + l.String(), nil
}
