package medialink_test

import (
	"testing"

	"github.com/tmefeed/tmefeed/internal/medialink"
)

func TestLinks(t *testing.T) {
	cases := []struct {
		base, file, thumb   string
		wantFile, wantThumb string
	}{
		{"", "https://cdn4.telesco.pe/a.jpg", "https://cdn4.telesco.pe/b.jpg", "https://cdn4.telesco.pe/a.jpg", "https://cdn4.telesco.pe/b.jpg"},
		{"https://feeds.example", "https://cdn4.telesco.pe/a.jpg", "https://cdn4.telesco.pe/b.jpg", "https://feeds.example/media/news/42/1", "https://feeds.example/media/news/42/1?thumb=1"},
		{"https://feeds.example", "", "https://cdn4.telesco.pe/b.jpg", "", "https://feeds.example/media/news/42/1?thumb=1"},
		{"https://feeds.example/tmefeed", "https://cdn4.telesco.pe/a.jpg", "", "https://feeds.example/tmefeed/media/news/42/1", ""},
	}
	if f, th := medialink.Links("https://feeds.example", "news", 0, 1, "https://cdn4.telesco.pe/a.jpg", "https://cdn4.telesco.pe/b.jpg"); f != "https://cdn4.telesco.pe/a.jpg" || th != "https://cdn4.telesco.pe/b.jpg" {
		t.Errorf("a post without a number has no durable link: got %q, %q", f, th)
	}
	for _, c := range cases {
		f, th := medialink.Links(c.base, "news", 42, 1, c.file, c.thumb)
		if f != c.wantFile || th != c.wantThumb {
			t.Errorf("Links(%q, %q, %q) = %q, %q; want %q, %q", c.base, c.file, c.thumb, f, th, c.wantFile, c.wantThumb)
		}
	}
}
