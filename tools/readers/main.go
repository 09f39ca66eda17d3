// Command readers checks tmefeed's feed-reader documents in a real reader:
// Miniflux (its Go module, pinned; see minifluxModule) over a PostgreSQL
// of the run's own.
//
// It starts the fixture origin (the recorded channels with 4 synthetic
// copies: 13 channels, their pictures served by the origin), tmefeed
// against it behind a proxy that notes every answer, a PostgreSQL in a
// temporary directory and Miniflux, all on loopback. Through Miniflux's
// REST API it subscribes to the RSS, Atom and JSON Feed documents of one
// feed of all 13 channels and of each recorded channel, and compares each
// feed's entries with the posts tmefeed's JSON API (POST /v1/feed) gives
// for it: link, title, date, pictures in the content, enclosures (URL and
// type). Then it refreshes every feed (each must be answered 304), has
// the origin publish a post, refreshes again (the post must arrive once,
// in the feeds holding its channel, and nothing else), and once more
// (304 again). It prints a summary and exits 1 on any mismatch.
//
//	go run ./tools/readers            # make readers
//	go run ./tools/readers -v         # the processes' output too
//
// PostgreSQL comes from Debian's postgresql package (initdb, postgres and
// pg_isready on PATH or under /usr/lib/postgresql/*/bin); as root its
// programs run as the postgres user the package creates. Miniflux is built
// with `go install` into the user's cache the first time.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/procbin"
)

// publishedChannel is where the run publishes its post.
const publishedChannel = "just_launched"

func main() {
	verbose := flag.Bool("v", false, "show the output of PostgreSQL, Miniflux and tmefeed")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	keep := flag.Bool("keep", false, "keep the temporary directory (PostgreSQL's data, the built tmefeed)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	log := io.Discard
	if *verbose {
		log = os.Stderr
	}
	mismatches, err := run(ctx, os.Stdout, log, *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "readers:", err)
		os.Exit(1)
	}
	if mismatches > 0 {
		os.Exit(1)
	}
}

// answers notes the status of each answer the proxy in front of tmefeed
// passed on, by request URI.
type answers struct {
	mu sync.Mutex
	by map[string][]int
}

func (a *answers) add(uri string, status int) {
	a.mu.Lock()
	a.by[uri] = append(a.by[uri], status)
	a.mu.Unlock()
}

// last is the status of the latest answer to uri and how many there were.
func (a *answers) last(uri string) (int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.by[uri]
	if len(s) == 0 {
		return 0, 0
	}
	return s[len(s)-1], len(s)
}

// subscription is one feed document subscribed in Miniflux.
type subscription struct {
	format   string // rss, atom, jsonfeed
	channels []string
	uri      string // the document's request URI at the proxy
	id       int64  // Miniflux's feed id
}

func (s subscription) name() string {
	if len(s.channels) > 1 {
		return fmt.Sprintf("%-8s %d channels", s.format, len(s.channels))
	}
	return fmt.Sprintf("%-8s %s", s.format, s.channels[0])
}

func run(ctx context.Context, out, log io.Writer, keep bool) (int, error) {
	started := time.Now()
	dir, err := os.MkdirTemp("", "tmefeed-readers-")
	if err != nil {
		return 0, err
	}
	if keep {
		fmt.Fprintln(out, "keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	// The fixture origin, its pictures served by itself.
	oln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	originURL := "http://" + oln.Addr().String()
	origin := fixtures.NewOrigin(fixtures.OriginOptions{Synthetic: 4, MediaBase: originURL})
	osrv := &http.Server{Handler: origin, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = osrv.Serve(oln) }()
	defer osrv.Close()
	all := origin.Channels()
	var recorded []string
	for _, ch := range all {
		if !strings.HasPrefix(ch, "loadchan") {
			recorded = append(recorded, ch)
		}
	}

	bin, err := procbin.Build(ctx, dir, false, log)
	if err != nil {
		return 0, err
	}
	mfBin, err := minifluxBinary(ctx, log)
	if err != nil {
		return 0, err
	}

	// tmefeed reads the origin on every request (CACHE_MODE=off), so a
	// post published there is in the next document, with a budget no
	// subscription round can spend.
	port, err := procbin.FreePort()
	if err != nil {
		return 0, err
	}
	tmefeedURL := "http://127.0.0.1:" + strconv.Itoa(port)
	tf, err := start("tmefeed", exec.Command(bin, "serve", "--port", strconv.Itoa(port), "--origin", originURL,
		"--cache-mode", "off", "--origin-rpm", "100000", "--client-origin-rpm", "0", "--log-level", "warn"), log)
	if err != nil {
		return 0, err
	}
	defer tf.stop()
	if err := waitHTTP(ctx, tf, tmefeedURL+"/healthz"); err != nil {
		return 0, err
	}

	// The proxy Miniflux reads tmefeed through: it notes each answer.
	seen := &answers{by: map[string][]int{}}
	target, _ := url.Parse(tmefeedURL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		seen.add(r.Request.URL.RequestURI(), r.StatusCode)
		return nil
	}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	psrv := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = psrv.Serve(pln) }()
	defer psrv.Close()
	proxyURL := "http://" + pln.Addr().String()

	pg, err := startPostgres(ctx, dir, log)
	if err != nil {
		return 0, err
	}
	defer pg.stop()

	mport, err := procbin.FreePort()
	if err != nil {
		return 0, err
	}
	mf := &miniflux{base: "http://127.0.0.1:" + strconv.Itoa(mport), user: "admin", pass: "readers-check", http: &http.Client{Timeout: time.Minute}}
	cmd := exec.Command(mfBin)
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+pg.url, "RUN_MIGRATIONS=1",
		"CREATE_ADMIN=1", "ADMIN_USERNAME="+mf.user, "ADMIN_PASSWORD="+mf.pass,
		"LISTEN_ADDR=127.0.0.1:"+strconv.Itoa(mport),
		// tmefeed is on loopback, which Miniflux refuses to fetch from
		// unless told.
		"FETCHER_ALLOW_PRIVATE_NETWORKS=1",
		// Pictures as the documents give them, not through Miniflux's proxy.
		"MEDIA_PROXY_MODE=none",
		// Feeds are refreshed by this run alone.
		"DISABLE_SCHEDULER_SERVICE=1",
		"LOG_LEVEL=info")
	mfp, err := start("miniflux", cmd, log)
	if err != nil {
		return 0, err
	}
	defer mfp.stop()
	if err := waitHTTP(ctx, mfp, mf.base+"/healthcheck"); err != nil {
		return 0, err
	}

	// Subscriptions: all channels in one feed, and each recorded channel.
	var subs []subscription
	for _, chs := range append([][]string{all}, split(recorded)...) {
		for _, f := range []string{"rss", "atom", "jsonfeed"} {
			subs = append(subs, subscription{format: f, channels: chs, uri: "/v1/" + f + "?channels=" + strings.Join(chs, ",")})
		}
	}
	for i := range subs {
		if subs[i].id, err = mf.subscribe(ctx, proxyURL+subs[i].uri); err != nil {
			return 0, fmt.Errorf("subscribe %s: %w", subs[i].name(), err)
		}
	}

	var total stats
	mismatches, decoded := 0, 0
	fail := func(format string, args ...any) {
		mismatches++
		fmt.Fprintf(out, "  MISMATCH "+format+"\n", args...)
	}
	fmt.Fprintf(out, "Miniflux (%s) over PostgreSQL, tmefeed over the fixture origin: %d channels (%d recorded)\n", minifluxModule, len(all), len(recorded))
	fmt.Fprintf(out, "%-32s %8s %8s %7s %11s %10s\n", "feed", "entries", "compared", "images", "enclosures", "mismatches")
	counts := map[int64]int{}
	for _, s := range subs {
		items, err := apiFeed(ctx, tmefeedURL, s.channels)
		if err != nil {
			return 0, err
		}
		entries, err := mf.entries(ctx, s.id)
		if err != nil {
			return 0, err
		}
		if f, err := mf.feed(ctx, s.id); err != nil {
			return 0, err
		} else if f.ParsingErrorCount > 0 {
			fail("%s: Miniflux could not read it: %s", s.name(), f.ParsingErrorMessage)
		}
		st, diffs, notes := compareFeed(entries, expect(items), s.format == "rss", started)
		total.add(st)
		counts[s.id] = len(entries)
		fmt.Fprintf(out, "%-32s %8d %8d %7d %11d %10d\n", s.name(), len(entries), st.entries, st.images, st.enclosures, len(diffs))
		for _, d := range diffs {
			fail("%s: %s", s.name(), d)
		}
		for _, n := range notes {
			decoded++
			fmt.Fprintf(out, "  note: %s (Miniflux decodes entities in RSS titles twice)\n", n)
		}
	}

	// A refresh with nothing new: every document answered 304.
	if err := refreshAll(ctx, mf, subs); err != nil {
		return 0, err
	}
	for _, s := range subs {
		if st, n := seen.last(s.uri); st != http.StatusNotModified {
			fail("%s: refresh with nothing new answered %d (request %d), want 304", s.name(), st, n)
		}
	}

	// A post published at the origin arrives once, in the feeds holding
	// its channel, after one refresh.
	text := "Published for the reader check at " + time.Now().UTC().Format(time.TimeOnly)
	id := origin.PublishPost(publishedChannel, text)
	link := "https://t.me/" + publishedChannel + "/" + strconv.Itoa(id)
	if err := refreshAll(ctx, mf, subs); err != nil {
		return 0, err
	}
	arrived := 0
	for _, s := range subs {
		holds := slices.Contains(s.channels, publishedChannel)
		entries, err := mf.entries(ctx, s.id)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, e := range entries {
			if e.URL == link {
				n++
				if e.Title != text {
					fail("%s: the published post is titled %q, want %q", s.name(), e.Title, text)
				}
			}
		}
		st, _ := seen.last(s.uri)
		switch {
		case holds && (n != 1 || len(entries) != counts[s.id]+1 || st != http.StatusOK):
			fail("%s: after publishing, the post is there %d times, %d entries (was %d), answer %d", s.name(), n, len(entries), counts[s.id], st)
		case holds:
			arrived++
		case n != 0 || len(entries) != counts[s.id] || st != http.StatusNotModified:
			fail("%s: another channel's post changed it: %d times, %d entries (was %d), answer %d", s.name(), n, len(entries), counts[s.id], st)
		}
		counts[s.id] = len(entries)
	}

	// And the next refresh is answered 304, the post still there once.
	if err := refreshAll(ctx, mf, subs); err != nil {
		return 0, err
	}
	notModified := 0
	for _, s := range subs {
		st, _ := seen.last(s.uri)
		entries, err := mf.entries(ctx, s.id)
		if err != nil {
			return 0, err
		}
		if st != http.StatusNotModified || len(entries) != counts[s.id] {
			fail("%s: the refresh after the post answered %d with %d entries (was %d), want 304 and no change", s.name(), st, len(entries), counts[s.id])
			continue
		}
		notModified++
	}

	fmt.Fprintf(out, "feeds: %d (RSS, Atom and JSON Feed of 1 feed of %d channels, %d of them synthetic copies, and of each of the %d recorded channels)\n", len(subs), len(all), len(all)-len(recorded), len(recorded))
	fmt.Fprintf(out, "entries compared with the JSON API: %d (link, title, date; %d undated posts dated by the reader), pictures in content: %d, enclosures (URL and type): %d\n",
		total.entries, total.undated, total.images, total.enclosures)
	fmt.Fprintf(out, "RSS titles Miniflux decodes twice: %d\n", decoded)
	fmt.Fprintf(out, "published post %s: arrived once in %d of %d feeds holding %s\n", link, arrived, 3*2, publishedChannel)
	fmt.Fprintf(out, "refresh after it: 304 for %d of %d feeds\n", notModified, len(subs))
	fmt.Fprintf(out, "mismatches: %d\n", mismatches)
	fmt.Fprintf(out, "took %s\n", time.Since(started).Round(time.Second))
	return mismatches, nil
}

func split(chs []string) [][]string {
	out := make([][]string, len(chs))
	for i, c := range chs {
		out[i] = []string{c}
	}
	return out
}

func refreshAll(ctx context.Context, mf *miniflux, subs []subscription) error {
	for _, s := range subs {
		if err := mf.refresh(ctx, s.id); err != nil {
			return fmt.Errorf("refresh %s: %w", s.name(), err)
		}
	}
	return nil
}

// apiFeed is POST /v1/feed for channels as a document holds them: the
// newest posts, as many as a document's default window.
func apiFeed(ctx context.Context, base string, channels []string) ([]apiItem, error) {
	body, _ := json.Marshal(map[string]any{"channels": channels, "order": "newest", "limit": 100})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/feed", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST /v1/feed: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Result []apiItem `json:"result"`
		Failed []any     `json:"failed_channels"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST /v1/feed %v: status %d, %v", channels, resp.StatusCode, err)
	}
	if len(out.Failed) > 0 {
		return nil, errors.New("POST /v1/feed: channels failed: " + fmt.Sprint(out.Failed))
	}
	return out.Result, nil
}
