package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/internal/gcra"
	"github.com/tmefeed/tmefeed/internal/keys"
	"github.com/tmefeed/tmefeed/origin"
)

// newCache builds the cache tiers the configuration asks for.
// maxBytes is the budget's share for the page bytes.
// hooks receive the Valkey tier's events (for metrics).
func newCache(ctx context.Context, cfg serveConfig, maxBytes int64, log *slog.Logger, hooks cache.ValkeyHooks) (cache.Cache, error) {
	// Negative caching: a page that failed to load is answered with the
	// failure for NEGATIVE_CACHE_TTL instead of asking the origin again.
	var failures cache.Failures
	if cfg.NegativeTTL > 0 {
		failures = origin.Failures{}
	}
	if cfg.ValkeyURL != "" {
		// MEMORY_CACHE_MAX_TTL caps the client-side cache's TTL here (0 = 10s).
		v, err := cache.NewValkey(ctx, cache.ValkeyConfig{
			URL:           cfg.ValkeyURL,
			Refresh:       cfg.Refresh,
			LocalTTL:      cfg.MemoryMaxTTL,
			LocalMaxBytes: maxBytes,
			Timeout:       cfg.ValkeyTimeout,
			Failures:      failures,
			NegativeTTL:   cfg.NegativeTTL,
			Logger:        log,
			Hooks:         hooks,
		})
		if err != nil {
			return nil, fmt.Errorf("valkey cache: %w", err)
		}
		log.Debug("valkey cache", "local_max_bytes", maxBytes, "refresh", cfg.Refresh, "timeout", cfg.ValkeyTimeout)
		return v, nil
	}
	mem, err := cache.NewMemory(cache.MemoryConfig{
		MaxBytes:    maxBytes,
		Refresh:     cfg.Refresh,
		HardTTL:     cfg.MemoryMaxTTL,
		Failures:    failures,
		NegativeTTL: cfg.NegativeTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded cache: %w", err)
	}
	log.Debug("embedded cache", "max_bytes", maxBytes, "refresh", cfg.Refresh)
	return mem, nil
}

// newLimiter is the limiter of the origin budget: in Valkey when the page
// cache is there, so that every process draws on one budget (and on its
// share of it while Valkey is unreachable), else in process.
func newLimiter(pageCache cache.Cache) gcra.Limiter {
	if v, ok := pageCache.(*cache.Valkey); ok {
		l, err := gcra.NewValkey(gcra.ValkeyConfig{KV: v.KV(), Processes: keys.BudgetProcesses()})
		if err == nil {
			return l
		}
	}
	return gcra.NewLocal(gcra.LocalConfig{})
}
