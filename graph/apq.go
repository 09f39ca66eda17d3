package graph

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/maypok86/otter/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/tmefeed/tmefeed/internal/defaults"
	"github.com/tmefeed/tmefeed/internal/keys"
	"github.com/tmefeed/tmefeed/internal/memsize"
)

// Defaults for zero StoresConfig fields.
const (
	DefaultAPQBytes   = 1 << 20
	DefaultQueryBytes = 4 << 20
	// DefaultAnswerBytes bounds the kept answers of repeated requests:
	// a few hundred dashboard answers of tens of KB with their
	// compressed forms.
	DefaultAnswerBytes = 8 << 20
	DefaultAPQTTL      = time.Hour
)

// Heap estimates for the in-process GraphQL stores. stringEntryOverhead
// is otter's node, hash-table slot and sketch share for a string→string
// entry; docBytesPerByte is the heap a parsed and validated query document
// takes per byte of query text, which ranges over 18–37 B for the
// schema's queries (aliased fields at the low end, long flat selections
// at the high end), so a document's estimate is good to about a third.
// Measured as live-heap growth (amd64, Go 1.26, otter v2.4.0, gqlparser
// v2.5); TestStoresAccounting checks them.
const (
	stringEntryOverhead = 88
	docBytesPerByte     = 24
	docEntryOverhead    = 88 + 256 // the node, and the document's fixed part
)

// KV is a plain key-value store: one read per Get, one write per Set.
// (*cache.ValkeyKV is one.)
type KV interface {
	// Get returns the value under key; ok is false when there is none. An
	// error means the store could not say.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	// Set stores value under key for ttl.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// StoresConfig configures Stores.
type StoresConfig struct {
	// Shared backs automatic persisted queries so that every replica knows
	// them (Valkey); nil keeps them in this process only.
	Shared KV
	// APQTTL is how long Shared keeps a persisted query (DefaultAPQTTL).
	// A query used since is still known to the replicas that used it; a
	// client asking another is told to send the query again.
	APQTTL time.Duration
	// APQBytes bounds the persisted queries kept in process
	// (DefaultAPQBytes); QueryBytes the parsed query documents
	// (DefaultQueryBytes). Both count estimated heap bytes.
	APQBytes   int64
	QueryBytes int64
	// AnswerBytes bounds the answers kept under the requests that asked
	// for them (DefaultAnswerBytes), their compressed forms included.
	AnswerBytes int64
}

// Stores are the GraphQL handler's in-process caches: persisted queries
// parsed query documents and the answers of repeated requests, each
// bounded by bytes.
type Stores struct {
	apq     *apqStore
	queries *queryCache
	answers *answers
}

// NewStores returns the stores cfg describes.
func NewStores(cfg StoresConfig) (*Stores, error) {
	defaults.Set(&cfg.APQBytes, DefaultAPQBytes)
	defaults.Set(&cfg.QueryBytes, DefaultQueryBytes)
	defaults.Set(&cfg.AnswerBytes, DefaultAnswerBytes)
	defaults.Set(&cfg.APQTTL, DefaultAPQTTL)
	apq, err := newAPQStore(cfg.Shared, cfg.APQTTL, cfg.APQBytes)
	if err != nil {
		return nil, err
	}
	docs, err := otter.New(&otter.Options[string, *ast.QueryDocument]{
		MaximumWeight: uint64(cfg.QueryBytes),
		Weigher: func(q string, _ *ast.QueryDocument) uint32 {
			// The document keeps the query text as its source.
			return uint32(min(memsize.String(len(q))+int64(len(q))*docBytesPerByte+docEntryOverhead, math.MaxUint32))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("graph: query cache: %w", err)
	}
	ans, err := newAnswers(cfg.AnswerBytes, answerTTL)
	if err != nil {
		return nil, fmt.Errorf("graph: answers: %w", err)
	}
	return &Stores{apq: apq, queries: &queryCache{docs}, answers: ans}, nil
}

// Bytes is the estimated heap the stores hold.
func (s *Stores) Bytes() int64 {
	return int64(s.apq.local.WeightedSize() + s.queries.c.WeightedSize() + s.answers.c.WeightedSize())
}

// CleanUp finishes pending evictions, so that Bytes is exact. For tests
// and measurements.
func (s *Stores) CleanUp() {
	s.apq.local.CleanUp()
	s.queries.c.CleanUp()
	s.answers.c.CleanUp()
}

// Close stops the stores' background goroutines.
func (s *Stores) Close() {
	s.apq.local.StopAllGoroutines()
	s.queries.c.StopAllGoroutines()
	s.answers.c.StopAllGoroutines()
}

// queryCache keeps parsed and validated query documents by query text,
// bounded by bytes: a count bound would let a few large queries take
// megabytes each.
type queryCache struct {
	c *otter.Cache[string, *ast.QueryDocument]
}

var _ graphql.Cache[*ast.QueryDocument] = (*queryCache)(nil)

func (q *queryCache) Get(_ context.Context, query string) (*ast.QueryDocument, bool) {
	return q.c.GetIfPresent(query)
}

func (q *queryCache) Add(_ context.Context, query string, doc *ast.QueryDocument) {
	q.c.Set(query, doc)
}

// apqStore keeps automatic persisted queries: an in-process LRU in front of
// a shared store. The shared store (Valkey when configured) lets a query
// registered through one replica be used through any other; the LRU keeps
// hot queries a map lookup away, and is the only store without Valkey. A
// query lost from both is harmless: the client is told
// PERSISTED_QUERY_NOT_FOUND and sends it again.
type apqStore struct {
	local  *otter.Cache[string, string]
	shared KV // may be nil
	ttl    time.Duration
}

var _ graphql.Cache[string] = (*apqStore)(nil)

func newAPQStore(shared KV, ttl time.Duration, maxBytes int64) (*apqStore, error) {
	local, err := otter.New(&otter.Options[string, string]{
		MaximumWeight: uint64(maxBytes),
		Weigher: func(hash, query string) uint32 {
			return uint32(min(memsize.String(len(hash))+memsize.String(len(query))+stringEntryOverhead, math.MaxUint32))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("graph: APQ store: %w", err)
	}
	return &apqStore{local: local, shared: shared, ttl: ttl}, nil
}

// Get returns the query stored under its SHA-256 hash. A shared store that
// cannot answer counts as a miss: the client then sends the query.
func (s *apqStore) Get(ctx context.Context, hash string) (string, bool) {
	if q, ok := s.local.GetIfPresent(hash); ok {
		return q, true
	}
	if s.shared == nil {
		return "", false
	}
	b, ok, err := s.shared.Get(ctx, keys.APQ(hash))
	if err != nil || !ok || len(b) == 0 {
		return "", false
	}
	q := string(b)
	s.local.Set(hash, q)
	return q, true
}

// Add stores a query under its hash; gqlgen has checked that they match.
// A failed shared write only costs other replicas a round trip.
func (s *apqStore) Add(ctx context.Context, hash, query string) {
	s.local.Set(hash, query)
	if s.shared == nil {
		return
	}
	_ = s.shared.Set(ctx, keys.APQ(hash), []byte(query), s.ttl)
}
