package keys

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/redistest"
)

// The slots promised above, asked of a real Redis Cluster (CLUSTER
// KEYSLOT) for every key family tmefeed stores: a channel's pages, the
// responses rendered from them, and each one's lease and remembered
// failure share one slot, so the lease scripts and the write that clears a
// failure each touch one node; persisted queries, without a tag, spread.
func TestClusterKeySlots(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slot := func(key string) int {
		t.Helper()
		s, err := c.Slot(ctx, key)
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", key, err)
		}
		if s != int(hashSlot(key)) {
			t.Errorf("CLUSTER KEYSLOT %q = %d, the computed slot %d", key, s, hashSlot(key))
		}
		return s
	}

	channelSlots := map[int]bool{}
	for _, ch := range []string{"durov", "a1b2c", "tmefeed_news", "kanal_novostei", "x_______________________________"} {
		// Every name a page or response of the channel is stored under
		// (origin/request.go, pages.RenderedEntry's callers).
		var family []string
		for _, p := range []string{"body:0", "body:14", "more:before:32", "more:after:24", "preview", "embed:5", "unknown"} {
			family = append(family, Page(ch, p))
		}
		for _, r := range []string{"body:0", "post:42", "preview", "more:before:32"} {
			family = append(family, Response(ch, r))
		}
		want := slot(Page(ch, "body:0"))
		channelSlots[want] = true
		for _, k := range family {
			for _, key := range []string{k, Lease(k), Failed(k)} {
				if got := slot(key); got != want {
					t.Errorf("%q in slot %d, channel %s's in %d", key, got, ch, want)
				}
			}
		}
	}
	if len(channelSlots) < 3 {
		t.Errorf("5 channels in %d slots: channels do not spread over the cluster", len(channelSlots))
	}

	budget := slot(Budget("direct"))
	for _, k := range []string{Budget("proxy-1"), ClientBudget("192.0.2.7"), ClientBudget("2001:db8::/64")} {
		if got := slot(k); got != budget {
			t.Errorf("%q in slot %d, the direct egress's bucket in %d", k, got, budget)
		}
	}

	apqSlots := map[int]bool{}
	for i := range 8 {
		k := APQ(fmt.Sprintf("%064x", i*7919))
		s := slot(k)
		apqSlots[s] = true
		for _, side := range []string{Lease(k), Failed(k)} {
			if got := slot(side); got != s {
				t.Errorf("%q in slot %d, its query %q in %d", side, got, k, s)
			}
		}
	}
	if len(apqSlots) < 4 {
		t.Errorf("8 persisted queries in %d slots: they do not spread", len(apqSlots))
	}
}

// A key's side keys live on the node that serves the key: one node takes
// the lease, the page and the failure record.
func TestClusterSideKeysOnOneNode(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes := map[string]bool{}
	for i := range 12 {
		key := Page("chan"+strconv.Itoa(i), "body:0")
		owner, err := c.NodeFor(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		nodes[owner.Addr] = true
		// One MULTI/EXEC on the owner touching all three: a cluster refuses
		// a transaction across slots (CROSSSLOT).
		conn, err := owner.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range [][]string{{"MULTI"}, {"SET", key, "page"}, {"SET", Lease(key), "token", "NX", "PX", "5000"}, {"DEL", Failed(key)}} {
			if _, err := conn.Do(cmd...); err != nil {
				t.Fatalf("%v on %s's owner: %v", cmd, key, err)
			}
		}
		if r, err := conn.Do("EXEC"); err != nil || strings.Contains(r, "CROSSSLOT") {
			t.Errorf("EXEC over %s, its lease and failure: %q, %v", key, r, err)
		}
		conn.Close()
	}
	if len(nodes) != 3 {
		t.Errorf("12 channels on %d of 3 nodes", len(nodes))
	}
}
