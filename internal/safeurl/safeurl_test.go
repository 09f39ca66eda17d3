package safeurl_test

import (
	"testing"

	"github.com/tmefeed/tmefeed/internal/safeurl"
)

func TestMedia(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://cdn4.telesco.pe/file/abc.jpg", "https://cdn4.telesco.pe/file/abc.jpg"},
		{"https://cdn1.telegram-cdn.org/file/x.mp4?token=1", "https://cdn1.telegram-cdn.org/file/x.mp4?token=1"},
		{"//telegram.org/img/emoji/40/F09F.png", "https://telegram.org/img/emoji/40/F09F.png"},
		{"https://TELEGRAM.ORG/img/a.png", "https://TELEGRAM.ORG/img/a.png"},
		{"https://t.me:443/x", "https://t.me:443/x"},
		{"javascript:alert(1)", ""},
		{"JavaScript:alert(1)//https://cdn4.telesco.pe/", ""},
		{"data:image/png;base64,AAAA", ""},
		{"http://cdn4.telesco.pe/file/abc.jpg", ""},
		{"https://evil.example/file.jpg", ""},
		{"https://telesco.pe.evil.example/x", ""},
		{"https://eviltelesco.pe/x", ""},
		{"https://user:pw@cdn4.telesco.pe/x", ""},
		{"https://cdn4.telesco.pe:8443/x", ""},
		{"https://cdn4.telesco.pe\x00/x", ""},
		{"", ""},
		{"/relative/path.jpg", ""},
	} {
		got, ok := safeurl.Media(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Media(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

func TestLink(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"https://example.com/a?b=c", true},
		{"http://example.com", true},
		{"tg://resolve?domain=durov", true},
		{"HTTPS://example.com", true},
		{"javascript:alert(1)", false},
		{" javascript:alert(1)", false},
		{"jAvAsCrIpT:alert(1)", false},
		{"data:text/html,<script>", false},
		{"vbscript:x", false},
		{"?q=%23tag", false},
		{"//example.com", false},
		{"https://", false},
		{"", false},
	} {
		if got := safeurl.Link(tc.in); got != tc.want {
			t.Errorf("Link(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestMediaOn(t *testing.T) {
	origins := []string{"http://127.0.0.1:8081"}
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8081/cdn/cdn4.telesco.pe/file/a.jpg", "http://127.0.0.1:8081/cdn/cdn4.telesco.pe/file/a.jpg"},
		{"https://cdn4.telesco.pe/file/a.jpg", "https://cdn4.telesco.pe/file/a.jpg"},
		{"http://127.0.0.1:8082/cdn/a.jpg", ""},
		{"http://127.0.0.1:80810/cdn/a.jpg", ""},
		{"http://127.0.0.1:8081@evil.example/a.jpg", ""},
		{"http://127.0.0.1:8081", ""},
		{"javascript:alert(1)", ""},
	} {
		got, ok := safeurl.MediaOn(tc.in, origins)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("MediaOn(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := safeurl.MediaOn("http://127.0.0.1:8081/cdn/a.jpg", nil); ok {
		t.Error("an origin's URL accepted with no origins given")
	}
}
