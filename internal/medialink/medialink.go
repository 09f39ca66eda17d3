// Package medialink writes the service's durable media links,
// <base>/media/{channel}/{id}/{index} (?thumb=1 for the preview picture),
// which GET /media answers with a redirect to the media's current URL.
// Every face that links media through PUBLIC_URL (the feed-reader
// documents, the widget) uses these rules, so they link alike.
package medialink

import (
	"net/url"
	"strconv"
)

// Link is the durable link of the index-th media of post id of channel
// (its preview picture when thumb), under base (the service's public URL,
// without a trailing slash).
func Link(base, channel string, id, index int, thumb bool) string {
	l := base + "/media/" + url.PathEscape(channel) + "/" + strconv.Itoa(id) + "/" + strconv.Itoa(index)
	if thumb {
		l += "?thumb=1"
	}
	return l
}

// Links replaces a media's file and preview URLs, as the face would link
// them ("" for none), by their durable links under base; a URL the face
// would not link stays "", since /media could only redirect to it. An
// empty base returns them as they are, and so does a post without a
// number (id 0: t.me names it nowhere), which /media cannot look up.
func Links(base, channel string, id, index int, file, thumb string) (string, string) {
	if base == "" || id <= 0 {
		return file, thumb
	}
	if file != "" {
		file = Link(base, channel, id, index, false)
	}
	if thumb != "" {
		thumb = Link(base, channel, id, index, true)
	}
	return file, thumb
}
