// Package keys names everything tmefeed keeps in a cache, in one place.
//
// Valkey Cluster places a key by its hash tag, the part between the first
// '{' and the next '}', or by the whole key without one. Keys that are
// used together sit in one slot: a page and the responses rendered from it
// share the channel as their tag, and a key's lease and remembered failure
// (Lease, Failed) keep the key's tag. The version in a prefix changes whenever
// what is stored under it does, so that processes of different versions
// sharing one Valkey never read each other's formats.
package keys

import "strings"

// Page is the key of a t.me page's bytes; page names the page within its
// channel (e.g. "body:0", "more:before:42", "preview").
func Page(channel, page string) string { return "tme:v2:page:{" + channel + "}:" + page }

// Response is the key of a response rendered from a page of channel; name
// says everything the rendering depends on (e.g. "body:0", "post:42").
func Response(channel, name string) string { return "tme:v2:resp:{" + channel + "}:" + name }

// APQ is the key of an automatic persisted query, by its SHA-256 hash. It
// has no side keys, so no tag: queries spread over the cluster. v2: the
// query text as is (v1 held it in the page cache's encoding).
func APQ(hash string) string { return "tme:v2:apq:" + hash }

// Lease is the key of the lease that lets one process load key, in key's
// slot so that both can be read and written by one node.
func Lease(key string) string { return side(key, "lease") }

// Failed is the key where a failed load of key is remembered, in key's slot.
func Failed(key string) string { return side(key, "failed") }

// side names a key beside key, in the same cluster slot: a key with a hash
// tag keeps it, and one without is wrapped in braces whole, which hashes
// like the bare key. (A key holding a '}' but no tag cannot be wrapped;
// its side key may land elsewhere, which only costs co-location: the one
// pipeline touching both then sends each to its own node.)
func side(key, suffix string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + ":" + suffix
		}
	}
	if strings.IndexByte(key, '}') >= 0 {
		return key + ":" + suffix
	}
	return "{" + key + "}:" + suffix
}

// Budget is the key of an origin budget's bucket (package gcra): egress
// names the address the requests leave from ("direct" without a proxy).
// Every budget key shares one hash tag, so that a request's two buckets
// (its egress and its client, see ClientBudget) are decided by one script
// on one node.
func Budget(egress string) string { return "tme:v1:{budget}:egress:" + egress }

// ClientBudget is the key of one client's share of the origin budget
// (CLIENT_ORIGIN_RPM), in Budget's slot.
func ClientBudget(client string) string { return "tme:v1:{budget}:client:" + client }

// BudgetProcesses is the key of the sorted set of the processes taking
// from the origin budget lately (package gcra), in Budget's slot: a
// process that cannot reach Valkey spends its share of the budget, 1/N.
func BudgetProcesses() string { return "tme:v1:{budget}:processes" }

// LiveLog is the stream of live change events every process records in,
// reads and resumes subscribers from (one key: one slot on a cluster).
func LiveLog() string { return "tmefeed:live:v1:log" }
