package cache

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/valkey-io/valkey-go"
)

// CheckValkeyURL reports what is wrong with a VALKEY_URL value as
// NewValkey would read it, without connecting, so that a process can
// refuse a bad setting before it starts anything.
func CheckValkeyURL(s string) error {
	_, err := parseValkeyURL(s)
	return err
}

// parseValkeyURL reads VALKEY_URL into client options. It takes one URL as
// valkey.ParseURL does (more cluster seeds with ?addr=host:port), or a
// comma-separated list of seeds, each a URL or a bare host[:port]:
//
//	redis://10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379
//	redis://:secret@10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
//	10.0.0.1:6379,10.0.0.2:6379
//
// The first seed's URL sets everything but the address (scheme, TLS,
// credentials, database, query options); a later seed given as a URL may
// only repeat them, since one client talks to every node alike. A single
// seed may be a standalone server or any node of a cluster: valkey-go asks
// it and picks. Several seeds name a cluster, so a standalone server behind
// them is refused at connection time, and a database other than 0, which a
// cluster does not have, is refused here.
func parseValkeyURL(s string) (valkey.ClientOption, error) {
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
		if parts[i] == "" {
			return valkey.ClientOption{}, fmt.Errorf("seed %d of %d is empty", i+1, len(parts))
		}
	}
	first, err := parseSeed(parts[0])
	if err != nil {
		return valkey.ClientOption{}, seedError(0, len(parts), err)
	}
	if len(parts) > 1 && first.DialCtxFn != nil {
		return valkey.ClientOption{}, errors.New("a unix socket cannot be one of several seeds")
	}
	for i, p := range parts[1:] {
		more, err := parseSeed(p)
		if err == nil && !sameConnection(first, more) {
			err = errors.New("differs from the first seed in more than its address (scheme, credentials, database or options); give them in the first seed only")
		}
		if err != nil {
			return valkey.ClientOption{}, seedError(i+1, len(parts), err)
		}
		first.InitAddress = append(first.InitAddress, more.InitAddress...)
	}
	first.InitAddress = unique(first.InitAddress)
	if len(first.InitAddress) > 1 {
		if first.SelectDB != 0 {
			return valkey.ClientOption{}, fmt.Errorf("database %d with %d cluster seeds: a Valkey Cluster has only database 0", first.SelectDB, len(first.InitAddress))
		}
		// Every process starts by asking a seed for the cluster's layout;
		// shuffled, many processes starting at once spread those requests.
		first.ShuffleInit = true
	}
	return first, nil
}

// unique drops repeated addresses, keeping the order.
func unique(addrs []string) []string {
	out := addrs[:0]
	for i, a := range addrs {
		if !slices.Contains(addrs[:i], a) {
			out = append(out, a)
		}
	}
	return out
}

// parseSeed reads one URL, or a bare host[:port] as redis://host[:port].
func parseSeed(s string) (valkey.ClientOption, error) {
	if !strings.Contains(s, "://") {
		host, _, err := net.SplitHostPort(s)
		if err != nil {
			host = s // no port: valkey.ParseURL adds 6379
		}
		if host == "" || strings.ContainsAny(host, "/?@#") {
			return valkey.ClientOption{}, fmt.Errorf("%q is neither a URL nor host:port", s)
		}
		s = "redis://" + s
	}
	opt, err := valkey.ParseURL(s)
	if err != nil {
		// url.Error repeats the URL, password included; keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return valkey.ClientOption{}, err
	}
	// valkey.ParseURL takes ?addr= values as they are (a bare host even
	// becomes the first seed's host on port 6379); a typo there would only
	// show as a seed that never answers.
	if u, err := url.Parse(s); err == nil {
		for _, a := range u.Query()["addr"] {
			if !validAddress(a) {
				return valkey.ClientOption{}, fmt.Errorf("address %q is not host:port with a port from 1 to 65535", a)
			}
		}
	}
	return opt, nil
}

// sameConnection reports whether two seeds' options agree on all but their
// addresses.
func sameConnection(a, b valkey.ClientOption) bool {
	return (a.TLSConfig == nil) == (b.TLSConfig == nil) &&
		(b.Username == "" || b.Username == a.Username) &&
		(b.Password == "" || b.Password == a.Password) &&
		(b.SelectDB == 0 || b.SelectDB == a.SelectDB) &&
		b.AlwaysRESP2 == a.AlwaysRESP2 && b.DisableCache == a.DisableCache &&
		b.ClientName == "" && b.Sentinel.MasterSet == ""
}

// seedError names a seed by its position: its text may hold a password.
func seedError(i, n int, err error) error {
	if n == 1 {
		return err
	}
	return fmt.Errorf("seed %d of %d: %w", i+1, n, err)
}

// validAddress reports whether a is host:port with a usable port.
func validAddress(a string) bool {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" || strings.ContainsAny(host, "/?@#") {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}
