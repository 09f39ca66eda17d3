package cache

import (
	"context"
	"fmt"

	"github.com/valkey-io/valkey-go"
)

// Ping asks Valkey for PONG through the breaker and with the call
// deadline, as every other call: readiness checks use it, and its failures
// count toward opening the breaker like any other.
func (v *Valkey) Ping(ctx context.Context) error {
	err := v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		return c.Do(ctx, c.B().Ping().Build()).Error()
	})
	if err != nil {
		return fmt.Errorf("cache: valkey ping: %w", err)
	}
	return nil
}
