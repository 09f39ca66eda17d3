package server_test

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
)

// Feed documents of the fixture pages t.me leaves unnamed or undated:
// late_edition's newest post has datetime="" (t.me served the page at
// 2026-06-19 09:15:00 UTC, while it was being published); five posts of
// nameless_notes are written without their number, two named nowhere.
func TestFormatsDateAndNameQuirks(t *testing.T) {
	_, ts := formatEnv(t, envOptions{})
	served := time.Date(2026, 6, 19, 9, 15, 0, 0, time.UTC)
	query := "?channels=late_edition,nameless_notes,emoji_party&order=newest&limit=100"
	for name, f := range formatRoutes {
		t.Run(name, func(t *testing.T) {
			res, body := httpGet(t, ts.URL+f.path+query)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			doc, err := gofeed.NewParser().Parse(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("gofeed: %v\n%s", err, body)
			}
			first := doc.Items[0]
			if first.Link != "https://t.me/late_edition/305" || first.PublishedParsed == nil || !first.PublishedParsed.Equal(served) {
				t.Errorf("first item %q dated %v, want late_edition/305 dated %v", first.Link, first.PublishedParsed, served)
			}
			if upd := doc.UpdatedParsed; name == "atom" && (upd == nil || !upd.Equal(served)) {
				t.Errorf("feed updated %v, want %v", upd, served)
			}
			ids := map[string]bool{}
			unnamed := 0
			for i, it := range doc.Items {
				if it.PublishedParsed == nil || it.PublishedParsed.Year() != 2026 {
					t.Errorf("item %d (%s): date %q", i, it.Link, it.Published)
				}
				if i > 0 && it.PublishedParsed != nil && doc.Items[i-1].PublishedParsed != nil && it.PublishedParsed.After(*doc.Items[i-1].PublishedParsed) {
					t.Errorf("item %d is newer than the one before it", i)
				}
				if ids[it.GUID] {
					t.Errorf("item %d: id %q given twice", i, it.GUID)
				}
				ids[it.GUID] = true
				if strings.HasSuffix(it.GUID, "/0") || strings.HasSuffix(it.Link, "/0") || it.Title == "Post 0" {
					t.Errorf("item %d: a post number 0: %q %q %q", i, it.GUID, it.Link, it.Title)
				}
				if strings.Contains(it.GUID, "#unnamed-") {
					unnamed++
					if it.Link != "https://t.me/s/nameless_notes" || !strings.HasPrefix(it.GUID, it.Link+"#unnamed-") {
						t.Errorf("unnamed item %d: id %q link %q", i, it.GUID, it.Link)
					}
				}
			}
			if unnamed != 2 {
				t.Errorf("%d unnamed items, want 2", unnamed)
			}
			if name == "rss" {
				// A guid that is no link to the post says so.
				var rss struct {
					Items []struct {
						Link string `xml:"link"`
						GUID struct {
							IsPermaLink string `xml:"isPermaLink,attr"`
							Value       string `xml:",chardata"`
						} `xml:"guid"`
					} `xml:"channel>item"`
				}
				if err := xml.Unmarshal(body, &rss); err != nil {
					t.Fatal(err)
				}
				for _, it := range rss.Items {
					if permalink := it.GUID.Value == it.Link; (it.GUID.IsPermaLink == "true") != permalink {
						t.Errorf("guid %+v of %q", it.GUID, it.Link)
					}
				}
			}
		})
	}

	// A since filter keeps the undated post, and only it.
	if !t.Failed() {
		for name, f := range formatRoutes {
			res, body := httpGet(t, ts.URL+f.path+"?channels=late_edition&order=newest&since=2026-06-19T00:00:00Z")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s since: %d %s", name, res.StatusCode, body)
			}
			doc, err := gofeed.NewParser().Parse(bytes.NewReader(body))
			if err != nil || len(doc.Items) != 1 || doc.Items[0].Link != "https://t.me/late_edition/305" {
				t.Errorf("%s since 19 June: %v %s", name, err, body)
			}
		}
	}
}
