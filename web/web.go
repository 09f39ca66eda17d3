// Package web serves the GraphQL playground: GraphiQL with tmefeed's
// example queries, its JavaScript and CSS embedded in the binary (npm's
// graphiql, react and react-dom, pinned by package-lock.json and copied to
// dist/ by `npm ci && npm run build`), so it works offline and loads
// nothing from a CDN.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:generate go run favicon_gen.go

//go:embed index.html dist favicon.svg favicon.ico
var files embed.FS

// faviconPath is where browsers look for a site's icon unasked; the
// server must route it to this handler.
const faviconPath = "/favicon.ico"

// faviconMaxAge is how long, in seconds, browsers may keep /favicon.ico
// without asking again; its URL carries no version.
const faviconMaxAge = 86400

// Config configures the playground.
type Config struct {
	// Endpoint is the GraphQL URL the playground calls ("/graphql").
	Endpoint string
	// Assets is the URL path the JavaScript, CSS and icon are served
	// under ("/playground/assets"); the handler must receive requests for
	// it, and for /favicon.ico.
	Assets string
	// Channels name the channels the example queries use (["durov"]).
	Channels []string
}

// Tab is one example query preloaded in the playground.
type Tab struct {
	Query     string `json:"query"`
	Variables string `json:"variables,omitempty"`
}

// handler serves the page and the assets.
type handler struct {
	index    []byte
	assets   string
	versions map[string]string // asset name -> the version the page links
	once     sync.Once
	gz       map[string][]byte // gzip-compressed assets, made on first use
	icoTag   string            // ETag of favicon.ico
}

// Handler returns the playground: the embedded files under cfg.Assets,
// the icon at /favicon.ico, the page for any other path.
func Handler(cfg Config) (http.Handler, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = "/graphql"
	}
	if cfg.Assets == "" {
		cfg.Assets = "/playground/assets"
	}
	cfg.Assets = strings.TrimSuffix(cfg.Assets, "/")
	if len(cfg.Channels) == 0 {
		cfg.Channels = []string{"durov"}
	}
	var manifest struct {
		SHA256 map[string]string `json:"sha256"`
	}
	b, err := files.ReadFile("dist/manifest.json")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		return nil, fmt.Errorf("web: manifest: %w", err)
	}
	svg, err := files.ReadFile("favicon.svg")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	ico, err := files.ReadFile("favicon.ico")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	conf, err := json.Marshal(map[string]any{"endpoint": cfg.Endpoint, "tabs": Examples(cfg.Channels)})
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	tmpl, err := template.ParseFS(files, "index.html")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	var page bytes.Buffer
	err = tmpl.Execute(&page, map[string]any{
		"Assets": cfg.Assets,
		"Config": template.JS(conf),
		"Versions": map[string]string{
			"css":      manifest.SHA256["graphiql.min.css"],
			"react":    manifest.SHA256["react.production.min.js"],
			"reactdom": manifest.SHA256["react-dom.production.min.js"],
			"graphiql": manifest.SHA256["graphiql.min.js"],
			"favicon":  shortHash(svg),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	versions := map[string]string{"favicon.svg": shortHash(svg)}
	for name, v := range manifest.SHA256 {
		versions[name] = v
	}
	return &handler{index: page.Bytes(), assets: cfg.Assets, versions: versions, icoTag: `"` + shortHash(ico) + `"`}, nil
}

// shortHash versions an asset's URL, as build.mjs does for dist/.
func shortHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, h.assets+"/"); ok {
		h.asset(w, r, name)
		return
	}
	if r.URL.Path == faviconPath {
		h.favicon(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(h.index)
}

func (h *handler) asset(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" || strings.Contains(name, "/") || name == "manifest.json" {
		http.NotFound(w, r)
		return
	}
	file := "dist/" + name
	if name == "favicon.svg" { // not from npm, so not in dist/
		file = name
	}
	b, err := files.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, "asset unreadable", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	switch path.Ext(name) {
	case ".js":
		hd.Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		hd.Set("Content-Type", "text/css; charset=utf-8")
	case ".svg":
		hd.Set("Content-Type", "image/svg+xml")
	default:
		hd.Set("Content-Type", "text/plain; charset=utf-8")
	}
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Add("Vary", "Accept-Encoding")
	// The page links assets with their content hash, so they never change
	// under one URL. Another version is another release's (its page met
	// this instance during a rolling deploy): these bytes must not be
	// kept for good under that URL.
	if v := r.URL.Query().Get("v"); v != "" && v == h.versions[name] {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.once.Do(h.compress)
		if z, ok := h.gz[name]; ok {
			hd.Set("Content-Encoding", "gzip")
			b = z
		}
	}
	_, _ = w.Write(b)
}

// favicon serves favicon.ico, cached for a day and revalidated by ETag.
func (h *handler) favicon(w http.ResponseWriter, r *http.Request) {
	b, err := files.ReadFile("favicon.ico")
	if err != nil {
		http.Error(w, "asset unreadable", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "image/x-icon")
	hd.Set("Cache-Control", "public, max-age="+strconv.Itoa(faviconMaxAge))
	hd.Set("ETag", h.icoTag)
	hd.Set("X-Content-Type-Options", "nosniff")
	// ServeContent answers If-None-Match with 304, and HEAD.
	http.ServeContent(w, r, "favicon.ico", time.Time{}, bytes.NewReader(b))
}

// compress gzips the scripts and styles once; they shrink about fourfold.
func (h *handler) compress() {
	h.gz = make(map[string][]byte)
	entries, _ := files.ReadDir("dist")
	for _, e := range entries {
		if ext := path.Ext(e.Name()); ext != ".js" && ext != ".css" {
			continue
		}
		b, err := files.ReadFile("dist/" + e.Name())
		if err != nil {
			continue
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(b)
		if zw.Close() == nil {
			h.gz[e.Name()] = buf.Bytes()
		}
	}
}

// acceptsGzip reports whether an Accept-Encoding value allows gzip: named
// (or x-gzip, or *) with a weight above zero.
func acceptsGzip(accept string) bool {
	ok := false
	for part := range strings.SplitSeq(accept, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "x-gzip" && coding != "*" {
			continue
		}
		q := 1.0
		if v, found := strings.CutPrefix(strings.ReplaceAll(strings.ToLower(params), " ", ""), "q="); found {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if coding != "*" {
			return q > 0 // named: its own weight decides
		}
		ok = q > 0
	}
	return ok
}
