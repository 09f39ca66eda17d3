package keys

import (
	"strings"
	"testing"
)

func TestSideKeysShareSlot(t *testing.T) {
	for _, key := range []string{Page("durov", "body:0"), Response("durov", "post:5"), APQ("ab12"), "plain", "x{a}y{b}"} {
		for _, side := range []string{Lease(key), Failed(key)} {
			if side == key {
				t.Errorf("side key of %q is the key itself", key)
			}
			if got, want := hashSlot(side), hashSlot(key); got != want {
				t.Errorf("%q is in slot %d, its key %q in slot %d", side, got, key, want)
			}
		}
	}
	if Lease("k") == Failed("k") {
		t.Error("lease and failure share a key")
	}
}

// A channel's pages and the responses rendered from them share a slot;
// different channels need not.
func TestChannelKeysShareSlot(t *testing.T) {
	page := hashSlot(Page("durov", "body:0"))
	for _, k := range []string{Page("durov", "more:before:42"), Page("durov", "preview"), Response("durov", "post:5")} {
		if got := hashSlot(k); got != page {
			t.Errorf("%q in slot %d, the channel's page in %d", k, got, page)
		}
	}
	if hashSlot(Page("telegram", "body:0")) == page {
		t.Error("two channels' pages hash alike: the tag is not the channel")
	}
}

// One request's buckets (its egress and its client) are decided by one
// script, which a cluster runs only over keys of one slot.
func TestBudgetKeysShareSlot(t *testing.T) {
	want := hashSlot(Budget("direct"))
	for _, k := range []string{Budget("proxy-2"), ClientBudget("192.0.2.7"), ClientBudget("2001:db8::/64")} {
		if got := hashSlot(k); got != want {
			t.Errorf("%q in slot %d, the direct egress in %d", k, got, want)
		}
	}
	if Budget("a") == ClientBudget("a") {
		t.Error("an egress and a client of one name share a key")
	}
}

// hashSlot is Valkey Cluster's key slot: CRC16 (XMODEM) of the hash tag,
// or of the whole key without one, modulo 16384.
func hashSlot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// The CRC16 above is the cluster's: the specification's own example.
func TestHashSlotIsValkeys(t *testing.T) {
	if got := hashSlot("123456789"); got != 0x31C3%16384 {
		t.Errorf("hashSlot(123456789) = %d, want %d", got, 0x31C3%16384)
	}
	if hashSlot("{user1000}.following") != hashSlot("{user1000}.followers") {
		t.Error("keys with one tag in different slots")
	}
}
