package graph

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/maypok86/otter/v2"
	"github.com/zeebo/xxh3"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/internal/memsize"
)

// Kept answers. A feed query's answer is rendered once per feed build and
// selection (fastPath), but reaching it still costs what every request
// through gqlgen costs: decoding the request, the query cache, choosing
// the operation, coercing variables, the limits and the complexity walk,
// collecting fields, the feed's own look-up. A dashboard sends the same
// request again and again, so the answer is also kept under the request's
// bytes (a POST body, or a GET's query string, which hold the document,
// the operation name, the variables and any persisted-query hash) and the
// media type it was answered in, beside its ETag and compressed forms. A
// repeated request is then read, looked up and written, as a REST hit is.
//
// An answer is kept with the versions of the feed builds it was cut from
// and served only while each is the build its feed would be answered from
// (feed.Service.Current): past the earliest refresh point of the pages
// behind it, or once one of its channels changed, the request goes the
// regular way, which rebuilds (or confirms) the feed and keeps the answer
// again. Only answers the fast path served are kept: data without errors,
// of queries whose root fields are feeds; never errors, mutations,
// subscriptions or answers that read pages no build tracks.

// answerEntryOverhead is the heap an answer entry costs beyond what its
// weigher counts from its contents: the otter node and the entry's fixed
// fields (measured as for the other stores' overheads).
const answerEntryOverhead = 256

// answerKey finds a kept answer: a hash of the request's bytes and how it
// was sent. The entry holds the bytes themselves, compared on every hit,
// so two requests whose hashes collide never share an answer.
type answerKey struct {
	sum    xxh3.Uint128
	get    bool // GET (or HEAD): the bytes are the query string
	strict bool // answered as application/graphql-response+json
}

// keptAnswer is an answer with everything a hit writes, made once.
type keptAnswer struct {
	request   string // the request's bytes
	rep       *httpcache.Rep
	versions  []feed.Version
	operation string // the operation's name, for the access log
	// vals are the header values a hit assigns, each slice taken capped at
	// one element so that an Add elsewhere copies rather than overwrites.
	// Shared by every hit: header maps get slices of it, never writes.
	vals [answerVals]string
}

// Indexes into keptAnswer.vals.
const (
	valType = iota
	valLenIdentity
	valLenGzip
	valLenZstd
	valETag
	valWeakETag
	valGzip
	valZstd
	answerVals
)

// answers keeps the answers of repeated requests (see above).
type answers struct {
	c *otter.Cache[answerKey, *keptAnswer]
}

func newAnswers(maxBytes int64, ttl time.Duration) (*answers, error) {
	c, err := otter.New(&otter.Options[answerKey, *keptAnswer]{
		MaximumWeight: uint64(maxBytes),
		Weigher: func(_ answerKey, a *keptAnswer) uint32 {
			n := memsize.String(len(a.request)) + memsize.Alloc(cap(a.rep.Body)) + a.rep.Size() +
				memsize.Alloc(cap(a.versions)*int(unsafe.Sizeof(feed.Version{}))) + answerEntryOverhead
			return uint32(min(n, math.MaxUint32))
		},
		// The versions decide; the expiry only lets answers nobody asks
		// for again go before the bound pushes them out.
		ExpiryCalculator: otter.ExpiryAccessing[answerKey, *keptAnswer](ttl),
	})
	if err != nil {
		return nil, err
	}
	return &answers{c: c}, nil
}

// keptFormsMax is the largest answer kept with its compressed forms.
const keptFormsMax = 1 << 20

// answerTTL is how long a kept answer nobody asks for stays.
const answerTTL = 10 * time.Minute

// hot serves kept answers in front of gqlgen's handler.
type hot struct {
	store   *answers
	feed    *feed.Service
	enc     *httpcache.Encoder
	run     *runner
	maxBody int64
	// noStore is a POST's Cache-Control; a GET's are run.cc's, made
	// ahead so that a hit formats none.
	noStore []string
	vary    [2]string // "Accept", "Accept-Encoding"
	bodies  sync.Pool // *[]byte: POST bodies being looked up
}

func newHot(store *answers, fs *feed.Service, enc *httpcache.Encoder, run *runner, maxBody int64) *hot {
	return &hot{store: store, feed: fs, enc: enc, run: run, maxBody: maxBody, noStore: []string{httpcache.NoStore}, vary: [2]string{"Accept", "Accept-Encoding"}}
}

// serve answers r from a kept answer and reports true, or reports false
// with r's body (read for the look-up) given back for the regular way.
// Anything it does not recognise as a plain repeated query goes that way,
// which answers it or refuses it with the right status.
func (h *hot) serve(w http.ResponseWriter, r *http.Request) bool {
	var get bool
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		get = true
	case http.MethodPost:
	default:
		return false
	}
	hd := r.Header
	if len(hd["Upgrade"]) > 0 {
		return false
	}
	strict, ok := quickNegotiate(header(hd, "Accept"))
	if !ok {
		return false
	}
	if get {
		q := r.URL.RawQuery
		if q == "" || int64(len(q)) > h.maxBody {
			return false
		}
		a, ok := h.store.c.GetIfPresent(answerKey{sum: xxh3.HashString128(q), get: true, strict: strict})
		if !ok || a.request != q {
			return false
		}
		return h.hit(w, r, a, true)
	}
	if !plainJSON(header(hd, "Content-Type")) || len(hd["Content-Encoding"]) > 0 || r.ContentLength > h.maxBody {
		return false
	}
	bp, _ := h.bodies.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	body, complete := readUpTo((*bp)[:0], r.Body, h.maxBody)
	*bp = body
	served := false
	if complete {
		a, ok := h.store.c.GetIfPresent(answerKey{sum: xxh3.Hash128(body), strict: strict})
		served = ok && a.request == string(body) && h.hit(w, r, a, false)
	}
	if !served {
		// The regular way reads the body again: what was read, then what
		// is left.
		read := bytes.Clone(body)
		if complete {
			r.Body = io.NopCloser(bytes.NewReader(read))
		} else {
			r.Body = readCloser{io.MultiReader(bytes.NewReader(read), r.Body), r.Body}
		}
	}
	if cap(body) <= bigDocument {
		h.bodies.Put(bp)
	}
	return served
}

type readCloser struct {
	io.Reader
	io.Closer
}

// readUpTo appends to buf what rd holds, up to max bytes; complete is
// false when it held more or could not be read to its end.
func readUpTo(buf []byte, rd io.Reader, limit int64) ([]byte, bool) {
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return buf, false
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf, false
		}
		if err == io.EOF {
			return buf, true
		}
		if err != nil {
			return buf, false
		}
	}
}

// hit writes a, if every build it was cut from is still current.
func (h *hot) hit(w http.ResponseWriter, r *http.Request, a *keptAnswer, get bool) bool {
	// One reading of the clock serves the versions' check and the
	// answer's max-age.
	now := h.run.now()
	var refreshAt time.Time
	stale := false
	for _, v := range a.versions {
		at, st, ok := h.feed.Current(v, now)
		if !ok {
			return false
		}
		if refreshAt.IsZero() || at.Before(refreshAt) {
			refreshAt = at
		}
		stale = stale || st
	}
	if h.run.operation != nil {
		h.run.operation(r.Context(), a.operation)
	}
	h.write(w, r, a, get, now, refreshAt, stale)
	return true
}

// write sends a kept answer: in the coding Accept-Encoding picks, with its
// ETag and for as long as its pages stay fresh when sent with GET (a POST
// answer is not cacheable downstream), or 304 when If-None-Match holds
// the ETag.
func (h *hot) write(w http.ResponseWriter, r *http.Request, a *keptAnswer, get bool, now, refreshAt time.Time, stale bool) {
	body, coding, _, vary := h.enc.Select(a.rep, header(r.Header, "Accept-Encoding"))
	hd := w.Header()
	hd["Content-Type"] = a.vals[valType : valType+1 : valType+1]
	varyBy := h.vary[:1:1]
	if vary {
		varyBy = h.vary[:2:2]
	}
	if old := hd["Vary"]; len(old) > 0 {
		hd["Vary"] = append(old, varyBy...)
	} else {
		hd["Vary"] = varyBy
	}
	if !get || h.run.refresh <= 0 {
		hd["Cache-Control"] = h.noStore
	} else {
		hd["Cache-Control"] = h.run.cc.Header(h.run.cc.MaxAge(now, refreshAt, stale))
		tag := valETag
		if coding != httpcache.Identity {
			tag = valWeakETag
		}
		hd["Etag"] = a.vals[tag : tag+1 : tag+1]
		if httpcache.NoneMatch(header(r.Header, "If-None-Match"), a.vals[tag]) {
			delete(hd, "Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	n, ce := valLenIdentity, -1
	switch coding {
	case httpcache.Gzip:
		n, ce = valLenGzip, valGzip
	case httpcache.Zstd:
		n, ce = valLenZstd, valZstd
	}
	if a.vals[n] != "" {
		hd["Content-Length"] = a.vals[n : n+1 : n+1]
	} else { // a form not kept, compressed now
		hd["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	if ce >= 0 {
		hd["Content-Encoding"] = a.vals[ce : ce+1 : ce+1]
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// keep keeps the answer body of a request and writes it as a hit would.
// request is the request's bytes (see answerKey).
func (h *hot) keep(w http.ResponseWriter, r *http.Request, request string, get, strict bool, body []byte, operation string, versions []feed.Version, refreshAt time.Time, stale bool) {
	ctype := mediaJSON + "; charset=utf-8"
	if strict {
		ctype = graphqlResponseJSON + "; charset=utf-8"
	}
	// The media type is part of the representation, so of its tag. The
	// compressed forms of a large answer (a 2,000-post feed is megabytes,
	// tens of milliseconds to compress) are made only when asked for.
	rep := h.enc.NewTaggedRep(body, httpcache.ETag([]byte(ctype), body), len(body) <= keptFormsMax)
	a := &keptAnswer{request: request, rep: rep, versions: versions, operation: operation}
	a.vals = [answerVals]string{
		valType:        ctype,
		valLenIdentity: strconv.Itoa(len(body)),
		valLenGzip:     rep.ContentLength(httpcache.Gzip),
		valLenZstd:     rep.ContentLength(httpcache.Zstd),
		valETag:        rep.ETag,
		valWeakETag:    httpcache.Weak(rep.ETag),
		valGzip:        httpcache.Gzip.String(),
		valZstd:        httpcache.Zstd.String(),
	}
	h.store.c.Set(answerKey{sum: xxh3.HashString128(request), get: get, strict: strict}, a)
	h.write(w, r, a, get, h.run.now(), refreshAt, stale)
}

// quickNegotiate is negotiate, without parsing the Accept values clients
// send most.
func quickNegotiate(accept string) (strict, ok bool) {
	switch accept {
	case "", "*/*", mediaJSON, "application/json, */*":
		return false, true
	case graphqlResponseJSON, graphqlResponseJSON + ", " + mediaJSON, graphqlResponseJSON + ", " + mediaJSON + ";q=0.9":
		return true, true
	}
	if strings.Contains(accept, mediaEventStream) {
		return false, false // an event stream is never kept
	}
	return negotiate(accept)
}

// plainJSON reports whether a POST's Content-Type is JSON in UTF-8.
func plainJSON(ct string) bool {
	switch ct {
	case mediaJSON, mediaJSON + "; charset=utf-8", mediaJSON + ";charset=utf-8", mediaJSON + "; charset=UTF-8":
		return true
	}
	return unsupportedBody(http.Header{"Content-Type": {ct}}) == ""
}

// header is h.Get for a canonical key, without canonicalizing it.
func header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
