package widget

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Frame sizes the snippet page offers, in CSS pixels.
const (
	minFrame, maxFrame          = 200, 4000
	defaultWidth, defaultHeight = "400", "600"
)

type snippetData struct {
	Channels, Order, Theme, Limit string
	Placeholder                   string // example channels, as the field's placeholder
	Width, Height                 string
	Error                         string
	Src                           string // the widget's URL, absolute
	Code                          string // the <iframe> to copy
	CSS, JS                       string
	Orders, Themes                []string
	MaxLimit                      int
	// Extra are the widget's parameters the form has no field for (the
	// feed filter's): kept as hidden fields, so a link to this page with
	// a filter keeps it.
	Extra []param
	// Mint: API keys are on; the form asks for one, the server mints the
	// widget key and writes the preview and the code (the script does
	// not rewrite them, since it cannot mint).
	Mint bool
}

type param struct{ Name, Value string }

// The parameters the form has fields for.
var formFields = []string{"channels", "order", "theme", "limit", "width", "height"}

// GET /embed/new: pick channels, order, theme and size; see the widget;
// copy its <iframe>. The page works as a plain form (the server writes
// the preview and the code); its script updates both as the fields change.
func (h *Handler) snippet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := snippetData{
		Channels: q.Get("channels"), Order: q.Get("order"), Theme: q.Get("theme"), Limit: q.Get("limit"),
		Width: q.Get("width"), Height: q.Get("height"),
		CSS: h.assets.url("widget.css"), JS: h.assets.url("snippet.js"),
		Orders: []string{"newest", "ranked"}, Themes: themes, MaxLimit: h.maxLimit,
		Mint: h.mint != nil, Placeholder: h.examples,
	}
	if d.Width == "" {
		d.Width = defaultWidth
	}
	if d.Height == "" {
		d.Height = defaultHeight
	}
	for _, k := range knownParams {
		if !slices.Contains(formFields, k) && q.Has(k) {
			d.Extra = append(d.Extra, param{k, q.Get(k)})
		}
	}
	status := http.StatusOK
	if d.Channels != "" {
		wq := url.Values{}
		for k, v := range q {
			if k != "width" && k != "height" {
				wq[k] = v
			}
		}
		v, err := parseView(wq.Encode(), h.feeds.MaxChannels(), h.maxLimit)
		switch {
		case err != nil:
			d.Error = err.Error()
		case !frameSize(d.Width, true) || !frameSize(d.Height, false):
			d.Error = "width: want " + strconv.Itoa(minFrame) + " to " + strconv.Itoa(maxFrame) + " pixels or 100%; height: " + strconv.Itoa(minFrame) + " to " + strconv.Itoa(maxFrame) + " pixels"
		default:
			query := v.query
			if v.theme != defaultTheme {
				query += "&theme=" + v.theme
			}
			if h.mint != nil {
				key, err := h.mint(r, v.req.Channels)
				if err != nil {
					d.Error = "API key: " + err.Error() + " (the widget key is made from yours, and reads only these channels)"
					status = http.StatusUnauthorized
					break
				}
				query += "&key=" + url.QueryEscape(key)
			}
			d.Src = baseURL(r) + "/embed?" + query
			d.Code = iframeCode(d.Src, "Telegram: @"+strings.Join(v.req.Channels, ", @"), d.Width, d.Height)
		}
		if d.Error != "" && status == http.StatusOK {
			status = http.StatusBadRequest
		}
	}
	var out bytes.Buffer
	if err := templates.ExecuteTemplate(&out, "snippet", d); err != nil {
		h.failFeed(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	h.writeOnce(w, r, status, out.Bytes())
}

func frameSize(s string, percentOK bool) bool {
	if percentOK && s == "100%" {
		return true
	}
	n, err := strconv.Atoi(s)
	return err == nil && n >= minFrame && n <= maxFrame
}

// iframeCode is the one line a page embeds the widget with. snippet.js
// writes the same line as the form changes; the browser test loads what
// it writes.
func iframeCode(src, title, width, height string) string {
	esc := template.HTMLEscapeString
	return `<iframe src="` + esc(src) + `" title="` + esc(title) + `" width="` + esc(width) + `" height="` + esc(height) +
		`" style="border:0;max-width:100%" loading="lazy" referrerpolicy="no-referrer"></iframe>`
}

// baseURL is the server as the browser reached it; snippet.js replaces
// it with location.origin, which a proxy cannot get wrong.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	host := r.Host
	if u, err := url.Parse("//" + host); err != nil || u.Host != host || host == "" {
		host = "localhost"
	}
	return scheme + "://" + host
}
