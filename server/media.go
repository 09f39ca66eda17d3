package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/tme"
)

// MediaService finds the current URL of a post's attachment;
// *pages.Service is one.
type MediaService interface {
	MediaURL(ctx context.Context, channel string, id, index int, thumb, cacheOnly bool, client string) (pages.MediaLink, error)
}

// maxMediaIndex bounds the index of GET /media: an album holds at most 10
// attachments, so anything much larger is a malformed link, not a miss.
const maxMediaIndex = 99

// GET /media/{channel}/{id}/{index}[?thumb=1]: 302 to the current URL of
// the post's index-th attachment (0-based, in the order of the post's
// "media" list) or its thumbnail. Telegram's CDN URLs expire; this link
// does not. The redirect may be kept downstream only while the page it was
// read from is fresh, so that no cache holds a URL past its life.
func (h *handler) media(w http.ResponseWriter, r *http.Request) {
	ch, err := tme.NormalizeUsername(pathParam(r, "channel"))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	id, err := tme.ParsePosition(pathParam(r, "id"))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	index, ok := mediaIndex(pathParam(r, "index"))
	if !ok {
		h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: "index must be a whole number from 0 to " + strconv.Itoa(maxMediaIndex) + ": the attachment's place in the post's media list"})
		return
	}
	thumb := false
	if r.URL.RawQuery != "" {
		q := r.URL.Query()
		if vs, has := q["thumb"]; has {
			if len(vs) > 1 {
				h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: "thumb must be given once"})
				return
			}
			switch vs[0] {
			case "1", "true":
				thumb = true
			case "0", "false":
			default:
				h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: "thumb must be 1 or 0"})
				return
			}
		}
	}
	link, err := h.mediaLinks.MediaURL(r.Context(), ch, id, index, thumb, cacheOnly(r), h.clientName(r))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	hd := w.Header()
	hd.Set("Location", link.URL)
	hd.Set("Cache-Control", h.cacheControl(link.RefreshAt, link.Stale))
	w.WriteHeader(http.StatusFound)
}

// mediaIndex reads a media index: decimal digits only, 0..maxMediaIndex.
func mediaIndex(s string) (int, bool) {
	if s == "" || len(s) > 2 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n <= maxMediaIndex
}
