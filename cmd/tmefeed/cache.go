package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tmefeed/tmefeed/cache"
)

// newCache builds the cache tiers the configuration asks for.
func newCache(ctx context.Context, cfg serveConfig, log *slog.Logger) (cache.Cache, error) {
	if cfg.ValkeyURL != "" {
		// MEMORY_CACHE_MAX_TTL caps the client-side cache's TTL here (0 = 10s).
		v, err := cache.NewValkey(ctx, cache.ValkeyConfig{
			URL:           cfg.ValkeyURL,
			Refresh:       cfg.Refresh,
			LocalTTL:      cfg.MemoryMaxTTL,
			LocalMaxBytes: int64(cfg.MemoryMaxMB) << 20,
			Timeout:       cfg.ValkeyTimeout,
			Logger:        log,
		})
		if err != nil {
			return nil, fmt.Errorf("valkey cache: %w", err)
		}
		log.Debug("valkey cache", "max_mb", cfg.MemoryMaxMB, "refresh", cfg.Refresh, "timeout", cfg.ValkeyTimeout)
		return v, nil
	}
	mem, err := cache.NewMemory(cache.MemoryConfig{
		MaxBytes: int64(cfg.MemoryMaxMB) << 20,
		Refresh:  cfg.Refresh,
		HardTTL:  cfg.MemoryMaxTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded cache: %w", err)
	}
	log.Debug("embedded cache", "max_mb", cfg.MemoryMaxMB, "refresh", cfg.Refresh)
	return mem, nil
}
