package graph

import (
	"context"
	"errors"

	"github.com/99designs/gqlgen/graphql"
	"github.com/maypok86/otter/v2"

	"github.com/tmefeed/tmefeed/cache"
)

// apqStore keeps automatic persisted queries: an in-process LRU in front of
// the shared cache. The shared tier (Valkey when configured) lets a query
// registered through one replica be used through any other; the LRU keeps
// hot queries a map lookup away and keeps APQ working when the shared tier
// stores nothing (CACHE_MODE=off). A query lost from both is harmless: the
// client is told PERSISTED_QUERY_NOT_FOUND and sends it again.
type apqStore struct {
	local  *otter.Cache[string, string]
	shared cache.Cache // may be nil
}

var _ graphql.Cache[string] = (*apqStore)(nil)

// errAPQMiss makes the shared cache report a miss without storing anything.
var errAPQMiss = errors.New("persisted query not found")

func newAPQStore(shared cache.Cache, entries int) (*apqStore, error) {
	local, err := otter.New(&otter.Options[string, string]{MaximumSize: entries})
	if err != nil {
		return nil, err
	}
	return &apqStore{local: local, shared: shared}, nil
}

func apqKey(hash string) string { return "tme:v1:apq:" + hash }

// Get returns the query stored under its SHA-256 hash.
func (s *apqStore) Get(ctx context.Context, hash string) (string, bool) {
	if q, ok := s.local.GetIfPresent(hash); ok {
		return q, true
	}
	if s.shared == nil {
		return "", false
	}
	e, err := s.shared.Get(ctx, apqKey(hash), func(context.Context) (cache.Entry, error) {
		return cache.Entry{}, errAPQMiss
	})
	if err != nil || len(e.Value) == 0 {
		return "", false
	}
	q := string(e.Value)
	s.local.Set(hash, q)
	return q, true
}

// Add stores a query under its hash; gqlgen has checked that they match.
func (s *apqStore) Add(ctx context.Context, hash, query string) {
	s.local.Set(hash, query)
	if s.shared == nil {
		return
	}
	_, _ = s.shared.Get(ctx, apqKey(hash), func(context.Context) (cache.Entry, error) {
		return cache.Entry{Value: []byte(query)}, nil
	})
}
