package sanitize

import (
	"encoding/json"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// allowed is every element and attribute sanitized HTML may hold.
var allowed = map[string][]string{
	"b": {"dir"}, "strong": {"dir"}, "i": {"dir", "class", "style"}, "em": {"dir"}, "u": {"dir"}, "ins": {"dir"},
	"s": {"dir"}, "strike": {"dir"}, "del": {"dir"}, "br": {"dir"}, "blockquote": {"dir", "class", "expandable"},
	"pre": {"dir", "class"}, "code": {"dir", "class"}, "tg-spoiler": {"dir"}, "span": {"dir", "class"},
	"tg-emoji": {"dir", "emoji-id"}, "a": {"dir", "href", "rel", "target"},
}

// checkSafe parses out as a browser would, inside a page, and fails on
// any element, attribute or URL outside the allow-list.
func checkSafe(t *testing.T, in, out string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader("<!doctype html><html><body><div id=post>" + out + "</div><p id=after>after</p></body></html>"))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *html.Node, inPost bool)
	walk = func(n *html.Node, inPost bool) {
		if n.Type == html.ElementNode {
			id := attr(n, "id")
			if id == "after" && inPost {
				t.Errorf("%q: the page after the post ended up inside it: %q", in, out)
			}
			if id == "post" {
				inPost = true
			} else if inPost {
				attrs, ok := allowed[n.Data]
				if !ok {
					t.Errorf("%q: element <%s> survived: %q", in, n.Data, out)
				}
				for _, a := range n.Attr {
					if !slices.Contains(attrs, a.Key) {
						t.Errorf("%q: attribute %s on <%s> survived: %q", in, a.Key, n.Data, out)
					}
					v := strings.ToLower(a.Val)
					for _, bad := range []string{"javascript", "data:", "expression", "vbscript", "evil.example"} {
						if strings.Contains(v, bad) {
							t.Errorf("%q: %s=%q survived: %q", in, a.Key, a.Val, out)
						}
					}
					if a.Key == "href" {
						u, err := url.Parse(a.Val)
						if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "tg") {
							t.Errorf("%q: link %q survived: %q", in, a.Val, out)
						}
						if attr(n, "rel") != "nofollow noreferrer noopener" || attr(n, "target") != "_blank" {
							t.Errorf("%q: link without rel/target: %q", in, out)
						}
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inPost)
		}
	}
	walk(doc, false)
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func TestHostileMarkupDoesNotSurvive(t *testing.T) {
	hostile := []struct{ in, keeps string }{
		{`<script>alert(1)</script>hi`, "hi"},
		{`<SCRIPT SRC=//evil.example/x.js></SCRIPT>hi`, "hi"},
		{`<scr<script>ipt>alert(1)</script>`, "ipt&gt;alert(1)"}, // inert text
		{`<b onclick="alert(1)" onmouseover=alert(1)>bold</b>`, "<b>bold</b>"},
		{`<a href="https://ok.example/" onclick="return confirm('x')">link</a>`, `<a href="https://ok.example/" rel="nofollow noreferrer noopener" target="_blank">link</a>`},
		{`<a href="javascript:alert(1)">j</a>`, "j"},
		{`<a href="JaVaScRiPt:alert(1)">j</a>`, "j"},
		{`<a href=" javascript:alert(1)">j</a>`, "j"},
		{`<a href="jav&#x09;ascript:alert(1)">j</a>`, "j"},
		{`<a href="jav&#x0A;ascript:alert(1)">j</a>`, "j"},
		{`<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">j</a>`, "j"},
		{`<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">d</a>`, "d"},
		{`<a href="vbscript:msgbox(1)">v</a>`, "v"},
		{`<a href="//evil.example/x">p</a>`, "p"},
		{`<a href="https://ok.example/" target="_top" rel="opener">t</a>`, `<a href="https://ok.example/" rel="nofollow noreferrer noopener" target="_blank">t</a>`},
		{`<img src=x onerror=alert(1)>`, ""},
		{`<img src="data:image/svg+xml;base64,PHN2Zy8+">`, ""},
		{`<iframe src="https://evil.example/"></iframe>after`, "after"},
		{`<iframe srcdoc="<script>alert(1)</script>">`, ""},
		{`<object data="https://evil.example/x.swf"></object><embed src="https://evil.example/x.swf">`, ""},
		{`<svg onload=alert(1)><script>alert(1)</script></svg>`, ""},
		{`<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`, ""},
		{`<style>body{background:url(javascript:alert(1))}</style>text`, "text"},
		{`<i style="width:expression(alert(1))">e</i>`, "<i>e</i>"},
		{`<b style="background:url(javascript:alert(1))">s</b>`, "<b>s</b>"},
		{`<i class="emoji" style="background-image:url('//evil.example/x.png')"><b>❤</b></i>`, `<i class="emoji"><b>❤</b></i>`},
		{`<div style="position:fixed;top:0;left:0;width:100%;height:100%">overlay</div>`, "overlay"},
		{`<form action="https://evil.example/"><input name=p><button>go</button></form>`, "go"},
		{`<meta http-equiv="refresh" content="0;url=https://evil.example/">`, ""},
		{`<base href="https://evil.example/"><link rel=stylesheet href="https://evil.example/x.css">`, ""},
		{`<b><i>crossed</b></i>`, "<b><i>crossed</i></b>"},
		{`<b>never closed`, "<b>never closed</b>"},
		{`</blockquote></div></article></body>stray`, "stray"},
		{`<blockquote>open<pre>open`, "<blockquote>open<pre>open</pre></blockquote>"},
		{`<!-- <script>alert(1)</script> -->c`, "c"},
		{`<![CDATA[<script>alert(1)</script>]]>`, "alert(1)]]&gt;"}, // inert text
		{`<span class="tg-spoiler x" onclick="alert(1)">s</span>`, "<span>s</span>"},
		{`<code class="language-go&quot; onmouseover=&quot;alert(1)">c</code>`, "<code>c</code>"},
		{`<tg-emoji emoji-id="1&quot;><script>alert(1)</script>">x</tg-emoji>`, ""},
		{`<a href="https://ok.example/"><img src="https://evil.example/x.png" onerror="alert(1)"></a>`, ""},
		{`<noscript><p title="</noscript><img src=x onerror=alert(1)>">`, ""},
		{`<template><script>alert(1)</script></template>`, ""},
		{`<textarea><script>alert(1)</script></textarea>`, ""},
		{`<video><source onerror="alert(1)"></video><audio src=x onerror=alert(1)>`, ""},
	}
	for _, h := range hostile {
		for _, out := range []string{Post(h.in, "chan"), New(Config{EmojiImages: true}).Sanitize(h.in, nil)} {
			checkSafe(t, h.in, out)
			if h.keeps != "" && out != h.keeps {
				t.Errorf("%q → %q, want %q", h.in, out, h.keeps)
			}
		}
	}
}

func TestTelegramFormattingRenders(t *testing.T) {
	const link = ` rel="nofollow noreferrer noopener" target="_blank"`
	cases := []struct{ in, want string }{
		{`<b>b</b> <strong>s</strong> <i>i</i> <em>e</em> <u>u</u> <s>s</s> <del>d</del>`, `<b>b</b> <strong>s</strong> <i>i</i> <em>e</em> <u>u</u> <s>s</s> <del>d</del>`},
		{`line<br/>line<br>`, `line<br/>line<br/>`},
		{`<a href="https://tmefeed.example/releases/1.5" target="_blank" rel="noopener" onclick="return confirm('Open this link?\n\n'+this.href);">release</a>`,
			`<a href="https://tmefeed.example/releases/1.5"` + link + `>release</a>`},
		{`<a href="https://poezda.example/r?a=1&amp;b=2">q</a>`, `<a href="https://poezda.example/r?a=1&amp;b=2"` + link + `>q</a>`},
		{`<a href="?q=%23retro">#retro</a>`, `<a href="https://t.me/s/chan?q=%23retro"` + link + `>#retro</a>`},
		{`<a href="tg://resolve?domain=durov">@durov</a>`, `<a href="tg://resolve?domain=durov"` + link + `>@durov</a>`},
		{`<code>x := 1</code>`, `<code>x := 1</code>`},
		{`<pre><code class="language-go">a<br/>b</code></pre><pre>plain</pre>`, `<pre><code class="language-go">a<br/>b</code></pre><pre>plain</pre>`},
		{`<blockquote>q</blockquote><blockquote expandable>long</blockquote><blockquote class="expandable">long</blockquote>`,
			`<blockquote>q</blockquote><blockquote expandable="">long</blockquote><blockquote class="expandable">long</blockquote>`},
		{`<tg-spoiler>secret</tg-spoiler> <span class="tg-spoiler">secret</span>`, `<tg-spoiler>secret</tg-spoiler> <span class="tg-spoiler">secret</span>`},
		{`<i class="emoji" style="background-image:url('//telegram.org/img/emoji/40/E29880.png')"><b>☀</b></i>`, `<i class="emoji"><b>☀</b></i>`},
		{`<tg-emoji emoji-id="5420216386448270341"><i class="emoji" style="background-image:url('//telegram.org/img/emoji/40/F09F9A80.png')"><b>🚀</b></i></tg-emoji>`,
			`<tg-emoji emoji-id="5420216386448270341"><i class="emoji"><b>🚀</b></i></tg-emoji>`},
		{`<span dir="auto">שלום</span> &lt;br&gt; Q&amp;A &quot;x&quot;`, `<span dir="auto">שלום</span> &lt;br&gt; Q&amp;A &#34;x&#34;`},
	}
	for _, c := range cases {
		if got := Post(c.in, "chan"); got != c.want {
			t.Errorf("Post(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestEmojiImagesKeepOnlyTelegramsImage(t *testing.T) {
	p := New(Config{EmojiImages: true})
	in := `<i class="emoji" style="background-image:url('//telegram.org/img/emoji/40/E29880.png')"><b>☀</b></i>`
	if got, want := p.Sanitize(in, nil), `<i class="emoji" style="background-image: url(&#39;//telegram.org/img/emoji/40/E29880.png&#39;)"><b>☀</b></i>`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, style := range []string{
		`background-image:url('//telegram.org.evil.example/img/emoji/40/E2.png')`,
		`background-image:url('//telegram.org/img/emoji/40/E2.png'), url(//evil.example/x.png)`,
		`background-image:url('//telegram.org/img/emoji/../../x.svg')`,
		`background-image:url('http://telegram.org/img/emoji/40/E2.png')`,
		`background-image:url("javascript:alert(1)")`,
		`background-image:url(data:image/png;base64,AAAA)`,
		`position:fixed; background-image:url('//telegram.org/img/emoji/40/E2.png')`,
	} {
		out := p.Sanitize(`<i class="emoji" style="`+style+`"><b>x</b></i>`, nil)
		checkSafe(t, style, out)
		if strings.Contains(out, "evil") || strings.Contains(out, "position") || strings.Contains(out, "../") || strings.Contains(out, "http:") {
			t.Errorf("%q kept: %q", style, out)
		}
	}
}

func TestRelativeLinksWithoutBaseLoseTheLinkNotTheText(t *testing.T) {
	if got, want := New(Config{}).Sanitize(`<a href="?q=%23retro">#retro</a> and <a href="/s/x">x</a>`, nil), `#retro and x`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestGoldenTextsKeepTheirTextAndFormatting sanitizes every HTML field the
// parser reads from the recorded pages: the text a reader sees and every
// formatting element stay, and the result is safe.
func TestGoldenTextsKeepTheirTextAndFormatting(t *testing.T) {
	var n int
	err := filepath.WalkDir("../parser/testdata/golden", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		eachHTML(v, func(in string) {
			n++
			out := Post(in, "tmefeed_news")
			checkSafe(t, in, out)
			if a, b := textOf(t, in), textOf(t, out); a != b {
				t.Errorf("%s: text changed\n in %q\nout %q", path, a, b)
			}
			for _, tag := range []string{"b", "i", "u", "s", "code", "pre", "blockquote", "tg-spoiler", "tg-emoji", "a", "br"} {
				if a, b := count(t, in, tag), count(t, out, tag); a != b {
					t.Errorf("%s: %d <%s> in, %d out\n in %q\nout %q", path, a, tag, b, in, out)
				}
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d HTML fields in the golden files", n)
	}
}

func eachHTML(v any, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "html" && s != "" {
				f(s)
			} else {
				eachHTML(x, f)
			}
		}
	case []any:
		for _, x := range v {
			eachHTML(x, f)
		}
	}
}

func parseFragment(t *testing.T, s string) []*html.Node {
	t.Helper()
	nodes, err := html.ParseFragment(strings.NewReader(s), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

func textOf(t *testing.T, s string) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range parseFragment(t, s) {
		walk(n)
	}
	return b.String()
}

func count(t *testing.T, s, tag string) int {
	var c int
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			c++
		}
		for x := n.FirstChild; x != nil; x = x.NextSibling {
			walk(x)
		}
	}
	for _, n := range parseFragment(t, s) {
		walk(n)
	}
	return c
}
