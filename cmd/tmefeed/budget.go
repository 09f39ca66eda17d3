package main

import (
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/tmefeed/tmefeed/server"
)

// The shares of MEMORY_CACHE_MAX_MB, in thousandths. The compressed pages
// get the most: a hit there costs a decompression, a miss a fetch from
// Telegram. A feed build is charged for the parsed pages it keeps alive,
// so its share must hold a 100-channel feed (about 5 MB) at the default
// budget. docs/RUNNING.md, "Memory", documents the split.
const (
	sharePages    = 400 // compressed page bytes and rendered answers (with Valkey: its client-side cache and fallback)
	shareHot      = 100 // uncompressed copies of the hottest answers
	shareParsed   = 150 // parsed pages
	shareBuilds   = 200 // kept feed builds, with the parsed pages they hold
	shareRendered = 70  // rendered feed responses
	shareAPQ      = 10  // automatic persisted queries
	shareQueries  = 40  // parsed GraphQL documents
	shareAnswers  = 30  // GraphQL answers kept under the requests that repeat them, with their compressed forms
	sharesTotal   = sharePages + shareHot + shareParsed + shareBuilds + shareRendered + shareAPQ + shareQueries + shareAnswers
)

// buildPageBytes is what one page of a feed build in progress is budgeted
// at: its parse (about 50 KB for a 20-post page) and a share of the page
// bytes being decompressed and parsed beside it.
const buildPageBytes = 64 << 10

// answerValueBytes is what one value of a GraphQL answer the executor
// builds is budgeted at (a 2,000-post feed of 54,000 values costs about
// 20 MB while it is built); minAnswerValues lets a large feed through at
// the smallest budget.
const (
	answerValueBytes = 400
	minAnswerValues  = 60_000
)

// memoryBudget is MEMORY_CACHE_MAX_MB divided among the in-process stores,
// in bytes, computed in one place (splitBudget).
type memoryBudget struct {
	Total    int64
	Pages    int64
	Hot      int64
	Parsed   int64
	Builds   int64
	Rendered int64
	APQ      int64
	Queries  int64
	Answers  int64
	// BuildingPages bounds the channel pages that feed builds in progress
	// hold at once: a quarter of the budget at buildPageBytes each, and at
	// least one feed of FEED_MAX_CHANNELS. It is working memory beside the
	// stores, which the Go memory limit covers.
	BuildingPages int
	// AnswerValues bounds the GraphQL answers the executor builds at
	// once, in estimated values: a quarter of the budget at
	// answerValueBytes each, at least minAnswerValues. Working memory
	// too, like BuildingPages.
	AnswerValues int
	// HeaderBytes bounds the request headers being read and not yet
	// complete, over every connection (server.ConnLimits): an eighth of
	// the budget, at least minHeaderBytes. net/http holds a header block
	// whole until it ends; without a bound, connections each sending
	// server.MaxHeaderBytes of header lines outgrow any budget.
	HeaderBytes int64
	// FanOutPages bounds the channel look-ups of every fan-out at once
	// (pages.Gate: subscriptions starting, previews), each holding about
	// a page and its parse: an eighth of the budget at buildPageBytes
	// each, at least minFanOutPages.
	FanOutPages int
}

// minFanOutPages keeps one subscription's or one preview request's
// look-ups running in parallel at the smallest budget.
const minFanOutPages = 16

// minHeaderBytes lets 64 requests at server.MaxHeaderBytes be read at once
// at the smallest budget.
const minHeaderBytes = 64 * server.MaxHeaderBytes

// splitBudget divides total bytes among the stores.
func splitBudget(total int64, maxChannels int) memoryBudget {
	part := func(share int64) int64 { return total * share / sharesTotal }
	return memoryBudget{
		Total:         total,
		Pages:         part(sharePages),
		Hot:           part(shareHot),
		Parsed:        part(shareParsed),
		Builds:        part(shareBuilds),
		Rendered:      part(shareRendered),
		APQ:           part(shareAPQ),
		Queries:       part(shareQueries),
		Answers:       part(shareAnswers),
		BuildingPages: max(maxChannels, int(total/4/buildPageBytes)),
		AnswerValues:  max(minAnswerValues, int(total/4/answerValueBytes)),
		HeaderBytes:   max(minHeaderBytes, total/8),
		FanOutPages:   max(minFanOutPages, int(total/8/buildPageBytes)),
	}
}

// defaultMemoryLimit is the Go runtime's soft memory limit when neither
// MEMORY_LIMIT_MB nor GOMEMLIMIT is set: 4 × the cache budget + 64 MiB.
// The live heap is at most the budget, the feed builds in progress
// (a quarter of it) and the runtime's own (tens of MiB); the collector
// lets the heap grow to twice the live heap between cycles (GOGC=100).
// The limit sits above that, so it never makes the collector run
// continually in normal operation, yet stops the heap from growing past
// it when something outside the budget does.
func defaultMemoryLimit(budget int64) int64 {
	return 4*budget + 64<<20
}

// applyMemoryLimit sets the runtime's soft memory limit for serve and
// returns it, or returns 0 when GOMEMLIMIT already governs it.
func applyMemoryLimit(cfg serveConfig, getenv func(string) string) int64 {
	limit := int64(cfg.MemoryLimitMB) << 20
	if limit == 0 {
		if _, ok := lookup(getenv, "GOMEMLIMIT"); ok {
			return 0 // the runtime read it at start-up
		}
		limit = defaultMemoryLimit(int64(cfg.MemoryMaxMB) << 20)
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// LogValue lists the split in MiB for the start-up log.
func (b memoryBudget) LogValue() slog.Value {
	mib := func(n int64) string { return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20)) }
	return slog.GroupValue(
		slog.String("pages", mib(b.Pages)),
		slog.String("hot", mib(b.Hot)),
		slog.String("parsed", mib(b.Parsed)),
		slog.String("builds", mib(b.Builds)),
		slog.String("rendered", mib(b.Rendered)),
		slog.String("graphql", mib(b.APQ+b.Queries+b.Answers)),
		slog.Int("building_pages", b.BuildingPages),
		slog.Int("answer_values", b.AnswerValues),
		slog.String("request_headers", mib(b.HeaderBytes)),
		slog.Int("fan_out_pages", b.FanOutPages),
	)
}

// debugLimit reads the runtime's soft memory limit without changing it.
func debugLimit() int64 { return debug.SetMemoryLimit(-1) }
