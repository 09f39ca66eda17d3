package parser

import (
	"reflect"
	"strings"
	"testing"
)

// "Please open Telegram to view this post" in place of a part of a post.
func TestUnsupportedPart(t *testing.T) {
	const label = `<div class="message_media_not_supported_wrap"><div class="message_media_not_supported">` +
		`<div class="message_media_not_supported_label">Please open Telegram to view this post</div>` +
		`<a href="https://t.me/chan_name/7" class="message_media_view_in_telegram">VIEW IN TELEGRAM</a></div></div>`
	const photo = `<a class="tgme_widget_message_photo_wrap" href="https://t.me/chan_name/7" style="background-image:url('https://cdn4.telesco.pe/file/p.jpg')"></a>`
	unsupported := Media{Type: MediaUnsupported}
	for _, c := range []struct {
		name  string
		inner string
		text  string
		media []Media
	}{
		{"shown with text", label + wrapText("Caption"), "Caption", []Media{unsupported}},
		{"shown alone", label, "", []Media{unsupported}},
		{"shown after a photo", photo + label + wrapText("Caption"), "Caption",
			[]Media{{Type: MediaImage, URL: "https://cdn4.telesco.pe/file/p.jpg", Available: true}, unsupported}},
		// Since 2025 a post with custom emoji carries its content twice; the
		// fallback stays hidden.
		{"fallback beside the shown text", `<div class="media_supported_cont">` + wrapText("Text") + `</div>` +
			`<div class="media_not_supported_cont">` + label + `</div>`, "Text", nil},
		{"fallback beside a photo", `<div class="media_supported_cont">` + photo + wrapText("Text") + `</div>` +
			`<div class="media_not_supported_cont">` + label + `</div>`, "Text",
			[]Media{{Type: MediaImage, URL: "https://cdn4.telesco.pe/file/p.jpg", Available: true}}},
		{"fallback with nothing else", `<div class="media_not_supported_cont">` + label + `</div>`, "", []Media{unsupported}},
		{"fallback with text only", wrapText("Text") + `<div class="media_not_supported_cont">` + label + `</div>`, "Text", nil},
		{"a player's own label", `<a class="tgme_widget_message_video_player not_supported" href="https://t.me/chan_name/7">` +
			strings.ReplaceAll(label, "Please open Telegram to view this post", "Media is too big") + `</a>` + wrapText("Talk"), "Talk",
			[]Media{{Type: MediaVideo}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := onePost(t, bubblePost(c.inner))
			text := ""
			if p.Content.Text != nil {
				text = p.Content.Text.String
			}
			if text != c.text {
				t.Errorf("text = %q, want %q", text, c.text)
			}
			if !reflect.DeepEqual(p.Content.Media, c.media) {
				t.Errorf("media = %+v, want %+v", p.Content.Media, c.media)
			}
		})
	}
	p := onePost(t, bubblePost(strings.ReplaceAll(label, "Please open Telegram to view this post", "Service message")))
	if p.Service == nil || p.Content.Media != nil {
		t.Errorf("service message embed: service %+v media %+v", p.Service, p.Content.Media)
	}
}

// hadashot_today 16: a caption beside media the web cannot show.
func TestFixtureUnsupportedPart(t *testing.T) {
	for _, f := range loadFixtures(t) {
		if f.rel != "s/hadashot_today.html" {
			continue
		}
		page, err := ParseBody(f.data)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Content.Posts {
			if p.ID != 16 {
				continue
			}
			if p.Content.Text == nil || p.Content.Text.String == "" || len(p.Content.Reacts) != 1 {
				t.Errorf("post 16 lost its text or reactions: %+v", p.Content)
			}
			if want := []Media{{Type: MediaUnsupported}}; !reflect.DeepEqual(p.Content.Media, want) {
				t.Errorf("post 16 media = %+v, want %+v", p.Content.Media, want)
			}
			return
		}
		t.Fatal("no post 16 in s/hadashot_today.html")
	}
	t.Fatal("no fixture s/hadashot_today.html")
}
