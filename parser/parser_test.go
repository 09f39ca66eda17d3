package parser

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tmefeed/tmefeed/tme"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the current parser output")

const fixturesDir = "../fixtures/pages"

// fixture is one recorded page and the parser that reads it.
type fixture struct {
	rel  string // path under fixtures/pages
	kind tme.Kind
	data []byte
}

func kindOfPath(rel string) tme.Kind {
	switch strings.SplitN(filepath.ToSlash(rel), "/", 2)[0] {
	case "s":
		return tme.KindBody
	case "more":
		return tme.KindMore
	case "preview":
		return tme.KindPreview
	case "embed":
		return tme.KindEmbed
	}
	return ""
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	var out []fixture
	err := filepath.WalkDir(fixturesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext != ".html" && ext != ".json" {
			return nil
		}
		rel, _ := filepath.Rel(fixturesDir, path)
		k := kindOfPath(rel)
		if k == "" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, fixture{rel: filepath.ToSlash(rel), kind: k, data: b})
		return nil
	})
	if err != nil {
		t.Fatalf("reading fixtures: %v", err)
	}
	if len(out) < 15 {
		t.Fatalf("want at least 15 fixture pages in %s, found %d", fixturesDir, len(out))
	}
	return out
}

// parseAs runs the parser for kind and returns the value to encode.
func parseAs(kind tme.Kind, b []byte) (any, error) {
	switch kind {
	case tme.KindBody:
		return ParseBody(b)
	case tme.KindMore:
		return ParseMore(b)
	case tme.KindPreview:
		return ParsePreview(b)
	case tme.KindEmbed:
		return ParseEmbed(b)
	}
	return nil, errors.New("unknown kind")
}

// TestGolden parses every fixture and compares the model, as encoding/json
// writes it by its tags, with the reviewed golden file. (The REST API's
// JSON of the same pages is server/restjson's golden.) Run `go test
// ./parser -update` after an intended change and review the diff.
func TestGolden(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.rel, func(t *testing.T) {
			v, err := parseAs(f.kind, f.data)
			var got []byte
			if err != nil {
				got = []byte(`{"error": ` + strconvQuote(err.Error()) + "}\n")
			} else {
				got, err = json.MarshalIndent(v, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, '\n')
			}
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(f.rel, filepath.Ext(f.rel))+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("no golden file (run go test ./parser -update): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: output differs from %s\n%s", f.rel, golden, firstDiff(string(want), string(got)))
			}
		})
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + itoa(i+1) + ":\n want: " + w + "\n  got: " + g
		}
	}
	return ""
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestDetectFixtures(t *testing.T) {
	for _, f := range loadFixtures(t) {
		if got := Detect(f.data); got != f.kind {
			t.Errorf("Detect(%s) = %q, want %q", f.rel, got, f.kind)
		}
	}
	if got := Detect([]byte("hello")); got != "" {
		t.Errorf("Detect(plain text) = %q, want empty", got)
	}
}

// Every fixture must yield what a user would expect of its kind: posts with
// ids and dates on channel pages, a title on previews.
func TestFixturesAreComplete(t *testing.T) {
	for _, f := range loadFixtures(t) {
		v, err := parseAs(f.kind, f.data)
		if err != nil {
			if errors.Is(err, ErrNotChannel) || errors.Is(err, ErrPostNotFound) {
				continue
			}
			t.Errorf("%s: %v", f.rel, err)
			continue
		}
		var posts []Post
		switch p := v.(type) {
		case *Page:
			posts = p.Content.Posts
			if f.kind == tme.KindBody && (p.Channel == nil || p.Channel.Username == "" || p.Channel.Title.String == "") {
				t.Errorf("%s: channel header missing: %+v", f.rel, p.Channel)
			}
			if len(posts) == 0 {
				t.Errorf("%s: no posts", f.rel)
			}
		case *Post:
			posts = []Post{*p}
		case *Preview:
			if p.Title == "" || p.Username == "" {
				t.Errorf("%s: preview without title or username: %+v", f.rel, p)
			}
		}
		for _, p := range posts {
			if p.ID == 0 && f.rel == "s/nameless_notes.html" && p.Footer.Date.Unix > 0 {
				continue // t.me names two of its posts nowhere (dates_test.go)
			}
			if p.Footer.Date == (Date{}) && f.rel == "embed/late_edition/305.html" && p.ID == 305 {
				continue // an undated post with no neighbours (dates_test.go)
			}
			if p.ID <= 0 || p.Footer.Date.Unix <= 0 || p.Channel == "" {
				t.Errorf("%s: post without id, date or channel: id=%d date=%d channel=%q", f.rel, p.ID, p.Footer.Date.Unix, p.Channel)
			}
			checkEntities(t, f.rel, p)
		}
	}
}

// checkEntities asserts that every entity lies inside the text when counted
// in UTF-16 code units.
func checkEntities(t testing.TB, name string, p Post) {
	t.Helper()
	if p.Content.Text == nil {
		return
	}
	n := len(utf16.Encode([]rune(p.Content.Text.String)))
	for _, e := range p.Content.Text.Entities {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > n {
			t.Errorf("%s post %d: entity %+v outside text of %d UTF-16 units", name, p.ID, e, n)
		}
	}
}

func wrapPost(inner string) []byte {
	return []byte(`<div class="tgme_widget_message_wrap"><div class="tgme_widget_message js-widget_message" data-post="chan_name/7">` +
		`<div class="tgme_widget_message_bubble"><div class="tgme_widget_message_text js-message_text" dir="auto">` + inner +
		`</div><div class="tgme_widget_message_footer"><div class="tgme_widget_message_info"><span class="tgme_widget_message_views">1.2K</span>` +
		`<span class="tgme_widget_message_meta"><a class="tgme_widget_message_date" href="https://t.me/chan_name/7"><time datetime="2026-03-01T10:00:00+00:00" class="time">10:00</time></a></span>` +
		`</div></div></div></div></div>`)
}

// substr16 returns the part of s that an entity designates, counting UTF-16 units.
func substr16(s string, off, length int) string {
	u := utf16.Encode([]rune(s))
	if off+length > len(u) {
		return "<out of range>"
	}
	return string(utf16.Decode(u[off : off+length]))
}

func TestEntitiesCountUTF16(t *testing.T) {
	html := `<i class="emoji" style="background-image:url('//telegram.org/img/emoji/40/F09F9880.png')"><b>😀</b></i> Привет, <b>мир</b>!<br/>` +
		`<tg-emoji emoji-id="5368324170671202286"><i class="emoji"><b>👍</b></i></tg-emoji> <i>курсив</i> <a href="?q=%23%D1%82%D0%B5%D0%B3">#тег</a> ` +
		`<a href="https://t.me/some_user">@some_user</a> <a href="https://example.com/a?b=1&amp;c=2">ссылка</a> <a href="https://example.org/">https://example.org/</a> ` +
		`<code>x := 1</code> <pre><code class="language-go">fmt.Println()</code></pre> <u>под</u><s>зач</s><tg-spoiler>тайна</tg-spoiler>&nbsp;&amp;`
	page, err := ParseMore(wrapPost(html))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Content.Posts) != 1 {
		t.Fatalf("want 1 post, got %d", len(page.Content.Posts))
	}
	text := page.Content.Posts[0].Content.Text
	wantPlain := "😀 Привет, мир!\n👍 курсив #тег @some_user ссылка https://example.org/ x := 1 fmt.Println() подзачтайна &"
	if text.String != wantPlain {
		t.Fatalf("plain text:\n got %q\nwant %q", text.String, wantPlain)
	}
	want := map[EntityKind]string{ // type → covered text
		EntityEmoji:         "😀",
		EntityBold:          "мир",
		EntityCustomEmoji:   "👍",
		EntityItalic:        "курсив",
		EntityHashtag:       "#тег",
		EntityMention:       "@some_user",
		EntityTextLink:      "ссылка",
		EntityURL:           "https://example.org/",
		EntityCode:          "x := 1",
		EntityPre:           "fmt.Println()",
		EntityUnderline:     "под",
		EntityStrikethrough: "зач",
		EntitySpoiler:       "тайна",
	}
	seen := map[EntityKind]bool{}
	for _, e := range text.Entities {
		w, ok := want[e.Type]
		if !ok {
			t.Errorf("unexpected entity %+v", e)
			continue
		}
		seen[e.Type] = true
		if got := substr16(text.String, e.Offset, e.Length); got != w {
			t.Errorf("%s entity covers %q, want %q (offset %d length %d)", e.Type, got, w, e.Offset, e.Length)
		}
		switch e.Type {
		case EntityTextLink:
			if e.URL != "https://example.com/a?b=1&c=2" {
				t.Errorf("text_link url = %q, want entities decoded once", e.URL)
			}
		case EntityPre:
			if e.Language != "go" {
				t.Errorf("pre language = %q, want go", e.Language)
			}
		case EntityCustomEmoji:
			if e.EmojiID != "5368324170671202286" {
				t.Errorf("custom emoji id = %q", e.EmojiID)
			}
		}
	}
	for typ := range want {
		if !seen[typ] {
			t.Errorf("no %s entity in %+v", typ, text.Entities)
		}
	}
	// 😀 is two UTF-16 units: the bold "мир" starts at 2+1+8 = 11, not at 10.
	for _, e := range text.Entities {
		if e.Type == EntityBold && e.Offset != 11 {
			t.Errorf("bold offset = %d, want 11 (UTF-16 units)", e.Offset)
		}
	}
}

func TestRTLText(t *testing.T) {
	page, err := ParseMore(wrapPost(`שלום <b>עולם</b> مرحبا`))
	if err != nil {
		t.Fatal(err)
	}
	txt := page.Content.Posts[0].Content.Text
	if txt.String != "שלום עולם مرحبا" || len(txt.Entities) != 1 || substr16(txt.String, txt.Entities[0].Offset, txt.Entities[0].Length) != "עולם" {
		t.Errorf("RTL text parsed as %+v", txt)
	}
}

func TestParseCount(t *testing.T) {
	for in, want := range map[string]int64{
		"845": 845, "1.2K": 1200, "7.03K": 7030, "12.5M": 12500000, "3.4M": 3400000, "1.1M": 1100000,
		"11 110 268": 11110268, "11 110 268 subscribers": 11110268, "2,832": 2832, "15K": 15000, "0": 0,
		"1.5B": 1500000000,
	} {
		got, ok := ParseCount(in)
		if !ok || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "views", "K"} {
		if _, ok := ParseCount(bad); ok {
			t.Errorf("ParseCount(%q) reported a number", bad)
		}
	}
}

func TestDurations(t *testing.T) {
	for in, want := range map[string]int{"0:15": 15, "12:03": 723, "1:02:03": 3723} {
		if got, ok := parseDuration(in); !ok || got != want {
			t.Errorf("parseDuration(%q) = %d, %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", ":", "1:", "a:b"} {
		if _, ok := parseDuration(bad); ok {
			t.Errorf("parseDuration(%q) accepted", bad)
		}
	}
}

func TestTypedErrors(t *testing.T) {
	if _, err := ParseBody([]byte("<html><body><p>nothing here</p></body></html>")); !errors.Is(err, ErrNotPage) {
		t.Errorf("ParseBody(unrelated page) error = %v, want ErrNotPage", err)
	}
	if _, err := ParseMore([]byte(`{"a":1}`)); !errors.Is(err, ErrNotPage) {
		t.Errorf("ParseMore(JSON object) error = %v, want ErrNotPage", err)
	}
	if _, err := ParseMore([]byte(`"unterminated`)); !errors.Is(err, ErrNotPage) {
		t.Errorf("ParseMore(bad JSON) error = %v, want ErrNotPage", err)
	}
	if _, err := ParseEmbed([]byte(`<div class="tgme_widget_message_error">Post not found</div>`)); !errors.Is(err, ErrPostNotFound) {
		t.Errorf("ParseEmbed(error page) error = %v, want ErrPostNotFound", err)
	}
	if _, err := ParsePreview([]byte(`<div class="tgme_page"><i class="tgme_icon_user"></i></div>`)); !errors.Is(err, ErrNotChannel) {
		t.Errorf("ParsePreview(unknown name) error = %v, want ErrNotChannel", err)
	}
	if _, err := ParsePreview([]byte(`<div class="tgme_page_title"><span>Chat</span></div><div class="tgme_page_extra">2 832 members, 37 online</div>`)); !errors.Is(err, ErrNotChannel) {
		t.Errorf("ParsePreview(group) error = %v, want ErrNotChannel", err)
	}
}

// Truncated pages (a connection cut mid-body) give what could be read and
// never panic or loop.
func TestTruncatedFixtures(t *testing.T) {
	for _, f := range loadFixtures(t) {
		step := max(len(f.data)/40, 1)
		for cut := 0; cut < len(f.data); cut += step {
			v, err := parseAs(f.kind, f.data[:cut])
			if err == nil && v == nil {
				t.Fatalf("%s cut at %d: nil result without error", f.rel, cut)
			}
			if p, ok := v.(*Page); ok && p != nil {
				for _, post := range p.Content.Posts {
					checkEntities(t, f.rel, post)
				}
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	if entries, err := os.ReadDir(fixturesDir); err == nil && len(entries) > 0 {
		_ = filepath.WalkDir(fixturesDir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".html") || strings.HasSuffix(path, ".json")) {
				if b, err := os.ReadFile(path); err == nil {
					f.Add(b)
				}
			}
			return nil
		})
	}
	f.Add(wrapPost(`<b>a<i>b</b>c</i><a href="?q=%23x">#x`))
	// Posts t.me leaves unnamed (data-view the only place of the number,
	// or nowhere) and undated (an empty or garbled datetime), on a page
	// and in a chunk.
	f.Add(unnamedPost("chan_name/", `eyJjIjotMTAwLCJwIjoiNzNnIiwidCI6MTc3OTI3ODQwMH0`, "2026-03-01T10:00:00+00:00"))
	f.Add(unnamedPost("chan_name/", `eyJjIjotMTAwLCJ0IjoxNzc5Mjc4NDAwfQ==`, ""))
	f.Add(unnamedPost("chan_name/7", `%%%`, "2026-03-01 10:00"))
	f.Add(append(wrapPost("older"), unnamedPost("chan_name/", `eyJwIjo4LCJ0IjoiMTc3OTI3ODQwMCJ9`, "")...))
	f.Add([]byte(`"<div class=\"tgme_widget_message\" data-post=\"a/1\">"`))
	f.Add(bubblePost(`<span dir="auto">` + nest(`x <b>y</b>`, " ", 2) + `</span><div class="media_not_supported_cont">` +
		`<div class="message_media_not_supported_label">Please open Telegram</div></div>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, k := range []tme.Kind{tme.KindBody, tme.KindMore, tme.KindPreview, tme.KindEmbed} {
			v, err := parseAs(k, b)
			if err != nil {
				continue
			}
			var posts []Post
			switch p := v.(type) {
			case *Page:
				posts = p.Content.Posts
			case *Post:
				posts = []Post{*p}
			}
			for _, p := range posts {
				checkEntities(t, "fuzz", p)
			}
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("result does not encode: %v", err)
			}
		}
		_ = Detect(b)
	})
}

// Hostile nesting (thousands of unclosed elements, then thousands of stray
// end tags) must stay cheap: the open-element stack is bounded.
func TestDeepNestingIsBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`<div class="tgme_widget_message" data-post="chan_name/1"><div class="tgme_widget_message_text">`)
	for range 50000 {
		b.WriteString("<span><b>")
	}
	b.WriteString("deep")
	for range 50000 {
		b.WriteString("</i>")
	}
	page, err := ParseMore(b.Bytes())
	if err != nil {
		t.Fatalf("ParseMore: %v", err)
	}
	if len(page.Content.Posts) != 1 || page.Content.Posts[0].Content.Text == nil || page.Content.Posts[0].Content.Text.String != "deep" {
		t.Fatalf("deeply nested text not read: %+v", page.Content.Posts)
	}
}

func TestParsePercent(t *testing.T) {
	for in, want := range map[string]int{"42%": 42, " 7% ": 7, "100%": 100, "0%": 0, "%": 0, "99999%": 0} {
		if got := parsePercent(in); got != want {
			t.Errorf("parsePercent(%q) = %d, want %d", in, got, want)
		}
	}
}

// begin and end hand an element to the reader of its role's group: a role
// without one would be read nowhere.
func TestEveryRoleHasAGroup(t *testing.T) {
	for r := rolePost; r < roleEntity; r++ {
		if r.group() == groupNone {
			t.Errorf("role %d has no group in roleGroups", r)
		}
	}
}

var datetimeAttr = regexp.MustCompile(`datetime="([^"]+)"`)

// A post's date string is the page's own, offset and all.
func TestDateKeepsPageString(t *testing.T) {
	n := 0
	for _, f := range loadFixtures(t) {
		if f.kind != tme.KindBody && f.kind != tme.KindEmbed {
			continue
		}
		var posts []Post
		if f.kind == tme.KindBody {
			p, err := ParseBody(f.data)
			if err != nil {
				continue
			}
			posts = p.Content.Posts
		} else if p, err := ParseEmbed(f.data); err == nil {
			posts = []Post{*p}
		}
		var onPage []string
		for _, m := range datetimeAttr.FindAllSubmatch(f.data, -1) {
			onPage = append(onPage, string(m[1]))
		}
		for _, p := range posts {
			if p.Footer.Date.Unix == 0 {
				continue
			}
			n++
			d := p.Footer.Date
			if !d.Estimated && !slices.Contains(onPage, d.String) { // an estimate is no datetime of the page (dates_test.go)
				t.Errorf("%s post %d: date %q is not a datetime on the page", f.rel, p.ID, d.String)
			}
			if at, err := time.Parse(time.RFC3339, d.String); err != nil || at.Unix() != d.Unix {
				t.Errorf("%s post %d: date %q does not name unix %d (%v)", f.rel, p.ID, d.String, d.Unix, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no dated posts in the fixtures")
	}
}

// A channel without a photo shows a data: placeholder; it is no avatar.
func TestPlaceholderIsNoAvatar(t *testing.T) {
	n := 0
	for _, f := range loadFixtures(t) {
		if !bytes.Contains(f.data, []byte(`src="data:`)) {
			continue
		}
		var avatar string
		switch f.kind {
		case tme.KindBody:
			p, err := ParseBody(f.data)
			if err != nil || p.Channel == nil {
				continue
			}
			avatar = p.Channel.Avatar
		case tme.KindPreview:
			p, err := ParsePreview(f.data)
			if err != nil {
				continue
			}
			avatar = p.Avatar
		default:
			continue
		}
		n++
		if strings.HasPrefix(avatar, "data:") {
			t.Errorf("%s: avatar is the placeholder %.40s…", f.rel, avatar)
		}
	}
	if n == 0 {
		t.Fatal("no fixture with a data: placeholder image")
	}
}

// TestInvalidUTF8 : a page with bytes that are not UTF-8 is read with each
// invalid run replaced by one U+FFFD, so every text and HTML of the model
// is valid UTF-8.
func TestInvalidUTF8(t *testing.T) {
	page := []byte(`<html><head><meta property="og:title" content="Bad ` + "\xff\xfe" + `title"></head><body>
<div class="tgme_channel_info_header_title"><span>Name ` + "\xc3" + `</span></div>
<div class="tgme_widget_message_wrap"><div class="tgme_widget_message" data-post="bad/1">
<div class="tgme_widget_message_text">caf` + "\xe9 \x80\x80" + ` <a href="https://example.com/` + "\xff" + `">link ` + "\xfe" + `</a></div>
<div class="tgme_widget_message_footer"><span class="tgme_widget_message_meta"><a class="tgme_widget_message_date" href="https://t.me/bad/1"><time datetime="2024-01-01T00:00:00+00:00"></time></a></span></div>
</div></div></body></html>`)
	p, err := ParseBody(page)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(b) || bytes.Contains(b, []byte(`\ufffd`)) {
		t.Fatalf("model JSON not valid UTF-8, or replaced by the encoder: %s", b)
	}
	if len(p.Content.Posts) != 1 || p.Content.Posts[0].Content.Text == nil {
		t.Fatalf("posts %+v", p.Content.Posts)
	}
	txt := p.Content.Posts[0].Content.Text
	if !strings.Contains(txt.String, "caf\uFFFD \uFFFD link \uFFFD") || !utf8.ValidString(txt.HTML) {
		t.Errorf("text %q / %q, want each invalid run as one U+FFFD", txt.String, txt.HTML)
	}
}
