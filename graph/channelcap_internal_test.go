package graph

import "testing"

// A client's distinct subscribed channels are capped over all its
// subscriptions: a channel watched twice counts once, a subscription that
// would go over is refused whole, other clients have their own count, and
// ending subscriptions gives the channels back.
func TestChannelCap(t *testing.T) {
	c := newChannelCap(3)
	r1, err := c.hold("a", []string{"x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.hold("a", []string{"y", "z"}) // y again: 3 distinct
	if err != nil {
		t.Fatalf("x, y and z: %v", err)
	}
	if _, err := c.hold("a", []string{"w"}); err == nil || err.Extensions["code"] != CodeRateLimited {
		t.Fatalf("a fourth channel: %v, want refused with RATE_LIMITED", err)
	}
	if _, err := c.hold("b", []string{"p", "q", "r"}); err != nil {
		t.Errorf("another client: %v", err)
	}
	r1()
	r1() // once only
	// y is still watched by the second subscription; x is free.
	if _, err := c.hold("a", []string{"w"}); err != nil {
		t.Errorf("after the first subscription ended: %v", err)
	}
	r2()
	if _, err := c.hold("", []string{"1", "2", "3", "4", "5"}); err != nil {
		t.Errorf("nobody's subscription: %v", err)
	}
	if len(c.held["a"]) != 1 {
		t.Errorf("client a holds %v, want only w", c.held["a"])
	}
}
