package feed

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tmefeed/tmefeed/pages"
)

// A cursor is the sort key of an item, so that paging continues after it
// even when the feed was rebuilt in between: "f1|<order>|<score bits>|<date>|<channel>|<id>",
// base64url-encoded so clients treat it as opaque.
const cursorVersion = "f1"

// cursor is a decoded cursor.
type cursor struct {
	order Order
	key   sortKey
}

func encodeCursor(o Order, k sortKey) string {
	s := cursorVersion + "|" + string(o[0]) + "|" + strconv.FormatUint(math.Float64bits(k.score), 16) +
		"|" + strconv.FormatInt(k.date, 10) + "|" + k.channel + "|" + strconv.Itoa(k.id)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func decodeCursor(s string) (cursor, error) {
	bad := fmt.Errorf("%w: invalid cursor %q", pages.ErrBadRequest, truncate(s))
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, bad
	}
	f := strings.Split(string(raw), "|")
	if len(f) != 6 || f[0] != cursorVersion {
		return cursor{}, bad
	}
	var c cursor
	switch f[1] {
	case "N":
		c.order = Newest
	case "R":
		c.order = Ranked
	default:
		return cursor{}, bad
	}
	bits, err1 := strconv.ParseUint(f[2], 16, 64)
	date, err2 := strconv.ParseInt(f[3], 10, 64)
	id, err3 := strconv.Atoi(f[5])
	if err1 != nil || err2 != nil || err3 != nil || f[4] == "" {
		return cursor{}, bad
	}
	c.key = sortKey{score: math.Float64frombits(bits), date: date, channel: f[4], id: id}
	return c, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
