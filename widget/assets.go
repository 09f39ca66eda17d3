package widget

import (
	"embed"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/tmefeed/tmefeed/internal/httpcache"
)

//go:embed assets
var assetFS embed.FS

// assets are the widget's CSS and JavaScript, each served under a name
// carrying a hash of its bytes (widget.3k2j1h.css): a name never changes
// meaning, so browsers keep them for a year and a new build is a new name.
type assets struct {
	byName  map[string]asset  // hashed name → asset
	hashed  map[string]string // plain name → hashed name
	version string            // changes when any asset does
}

type asset struct {
	rep   *httpcache.Rep // the bytes, their ETag and compressed forms
	ctype string
}

// loadAssets reads the embedded assets and, with enc, makes their gzip and
// zstd forms once: every widget on every page loads them.
func loadAssets(enc *httpcache.Encoder) (*assets, error) {
	a := &assets{byName: map[string]asset{}, hashed: map[string]string{}}
	entries, err := fs.ReadDir(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	var all []string
	for _, e := range entries {
		b, err := assetFS.ReadFile("assets/" + e.Name())
		if err != nil {
			return nil, err
		}
		sum := strconv.FormatUint(xxh3.Hash(b), 36)
		ext := path.Ext(e.Name())
		name := strings.TrimSuffix(e.Name(), ext) + "." + sum + ext
		ctype := mime.TypeByExtension(ext)
		if ctype == "" {
			return nil, fmt.Errorf("asset %s: no content type for %q", e.Name(), ext)
		}
		a.byName[name] = asset{rep: enc.NewRep(b, true), ctype: ctype}
		a.hashed[e.Name()] = name
		all = append(all, name)
	}
	a.version = strings.Join(all, ",")
	return a, nil
}

// url is the path an asset is served at.
func (a *assets) url(name string) string {
	h, ok := a.hashed[name]
	if !ok {
		panic("widget: no asset " + name) // a typo in this package, caught by its tests
	}
	return "/embed/assets/" + h
}

func (h *Handler) asset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := h.assets.byName[name]
	if !ok {
		h.errorPage(w, http.StatusNotFound, "no such asset: "+clip(name))
		return
	}
	// A HEAD gets the headers of the same GET: the form Accept-Encoding
	// picks, its length and its ETag (weak for a compressed form).
	httpcache.Write(w, r, http.StatusOK, h.enc.ChooseRep(a.rep, r.Header.Get("Accept-Encoding")), a.ctype, "public, max-age=31536000, immutable")
}
