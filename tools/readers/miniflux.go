package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// miniflux is a client of Miniflux's REST API (/v1), as the admin user.
type miniflux struct {
	base, user, pass string
	http             *http.Client
}

type mfEntry struct {
	ID          int64     `json:"id"`
	Title       string    `json:"title"`
	URL         string    `json:"url"`
	PublishedAt time.Time `json:"published_at"`
	Content     string    `json:"content"`
	Enclosures  []struct {
		URL      string `json:"url"`
		MimeType string `json:"mime_type"`
	} `json:"enclosures"`
}

type mfFeed struct {
	ID                  int64  `json:"id"`
	FeedURL             string `json:"feed_url"`
	Title               string `json:"title"`
	ParsingErrorCount   int    `json:"parsing_error_count"`
	ParsingErrorMessage string `json:"parsing_error_msg"`
	EtagHeader          string `json:"etag_header"`
	LastModifiedHeader  string `json:"last_modified_header"`
}

func (m *miniflux) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, m.base+path, body)
	if err != nil {
		return err
	}
	req.SetBasicAuth(m.user, m.pass)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return fmt.Errorf("miniflux %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("miniflux %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("miniflux %s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("miniflux %s %s: %w", method, path, err)
		}
	}
	return nil
}

// subscribe adds feedURL in the first category and returns the feed's
// id; Miniflux fetches it at once.
func (m *miniflux) subscribe(ctx context.Context, feedURL string) (int64, error) {
	var cats []struct {
		ID int64 `json:"id"`
	}
	if err := m.do(ctx, http.MethodGet, "/v1/categories", nil, &cats); err != nil {
		return 0, err
	}
	if len(cats) == 0 {
		return 0, fmt.Errorf("miniflux has no category")
	}
	var out struct {
		FeedID int64 `json:"feed_id"`
	}
	err := m.do(ctx, http.MethodPost, "/v1/feeds", map[string]any{"feed_url": feedURL, "category_id": cats[0].ID}, &out)
	return out.FeedID, err
}

// refresh fetches the feed now (Miniflux does it before answering).
func (m *miniflux) refresh(ctx context.Context, id int64) error {
	return m.do(ctx, http.MethodPut, "/v1/feeds/"+strconv.FormatInt(id, 10)+"/refresh", nil, nil)
}

func (m *miniflux) feed(ctx context.Context, id int64) (mfFeed, error) {
	var f mfFeed
	err := m.do(ctx, http.MethodGet, "/v1/feeds/"+strconv.FormatInt(id, 10), nil, &f)
	return f, err
}

func (m *miniflux) entries(ctx context.Context, id int64) ([]mfEntry, error) {
	var out struct {
		Total   int       `json:"total"`
		Entries []mfEntry `json:"entries"`
	}
	err := m.do(ctx, http.MethodGet, "/v1/feeds/"+strconv.FormatInt(id, 10)+"/entries?limit=1000&order=published_at&direction=desc", nil, &out)
	if err == nil && out.Total != len(out.Entries) {
		err = fmt.Errorf("miniflux: feed %d: %d entries of %d listed", id, len(out.Entries), out.Total)
	}
	return out.Entries, err
}
