package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/server"
)

// abuseCase is one malformed or hostile request and the answer it must get.
type abuseCase struct {
	name   string
	method string   // GET when empty
	target string   // path and query
	header []string // name, value pairs, sent in order
	body   string
	// noType sends a body without the Content-Type application/json that
	// bodies otherwise get.
	noType bool
	// chunked sends the body without a Content-Length.
	chunked bool
	// raw is the request exactly as written on the wire, for what
	// net/http's client will not send; the answer is read without sending
	// anything more.
	raw string

	status int
	code   string // the error code; "" for a success answer
	msg    string // text the error message must hold, e.g. the field's name
	allow  string // the Allow header a 405 must carry
	closed bool   // the server must end the connection after answering
	check  func(t *testing.T, a answer)
	figure string // when set, the time to answer is logged as a FIGURE
}

// answer is what came back for one abuse case.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	elapsed time.Duration // from the last byte sent to the answer's header
	closed  bool          // the server ended the connection after the answer
}

// padJSON pads a JSON object with spaces to exactly n bytes.
func padJSON(t *testing.T, obj string, n int) string {
	t.Helper()
	if len(obj)+2 > n {
		t.Fatalf("cannot pad %d bytes to %d", len(obj), n)
	}
	return obj[:1] + strings.Repeat(" ", n-len(obj)) + obj[1:]
}

func names(prefix string, n int) string {
	q := make([]string, n)
	for i := range q {
		q[i] = strconv.Quote(fmt.Sprintf("%s%04d", prefix, i))
	}
	return "[" + strings.Join(q, ",") + "]"
}

// previewOut decodes a POST /v1/previews answer.
func previewOut(t *testing.T, a answer) map[string]struct {
	Channel json.RawMessage   `json:"channel"`
	Error   *server.ErrorInfo `json:"error"`
} {
	t.Helper()
	var out map[string]struct {
		Channel json.RawMessage   `json:"channel"`
		Error   *server.ErrorInfo `json:"error"`
	}
	if err := json.Unmarshal(a.body, &out); err != nil {
		t.Fatalf("previews answer: %v; %s", err, a.body)
	}
	return out
}

// nameFails checks a 200 POST /v1/previews answer that holds exactly one
// name, failed with invalid_username.
func nameFails(t *testing.T, a answer) {
	t.Helper()
	out := previewOut(t, a)
	if len(out) != 1 {
		t.Fatalf("%d names in the answer, want 1: %.300s", len(out), a.body)
	}
	for name, r := range out {
		if r.Error == nil || r.Error.Code != server.CodeInvalidUsername || r.Channel != nil {
			t.Errorf("%q: %+v, want only error %s", name, r, server.CodeInvalidUsername)
		}
		if len(r.Error.Message) > 200 {
			t.Errorf("message of %d bytes echoes the input: %.100s", len(r.Error.Message), r.Error.Message)
		}
	}
}

// onePreview checks a 200 POST /v1/previews answer holding only the demo
// channel's card.
func onePreview(t *testing.T, a answer) {
	t.Helper()
	out := previewOut(t, a)
	if r, ok := out[demoChannel]; len(out) != 1 || !ok || r.Error != nil || len(r.Channel) == 0 {
		t.Errorf("answer %.300s, want only %s's card", a.body, demoChannel)
	}
}

// noBody checks an answer to HEAD.
func noBody(t *testing.T, a answer) {
	t.Helper()
	if len(a.body) != 0 {
		t.Errorf("HEAD answered %d body bytes", len(a.body))
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("HEAD Content-Type %q", ct)
	}
}

// TestAbuseREST sends malformed and hostile requests over a loopback
// connection to the real router and page service over the fixture origin.
// Every refusal must be the documented JSON error with its code, and none
// may reach the origin.
func TestAbuseREST(t *testing.T) {
	// The mount points answer anything they get, so a method routed past
	// the JSON 405 shows up as a 200.
	mount := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, r.Method+" reached the mount point\n")
	})
	e := newEnv(t, envOptions{refresh: 10 * time.Second, feed: true, graphQL: mount, playground: mount})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)

	const limit = server.DefaultMaxRequestBytes
	one := `{"channels": ["` + demoChannel + `"]}`
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	get := "GET %s HTTP/1.1\r\nHost: x\r\n\r\n"

	cases := []abuseCase{
		// Content types.
		{name: "previews without Content-Type", method: "POST", target: "/v1/previews", body: one, noType: true,
			status: 415, code: server.CodeUnsupportedMediaType, msg: "application/json"},
		{name: "previews as text/plain", method: "POST", target: "/v1/previews", body: one, header: []string{"Content-Type", "text/plain"},
			status: 415, code: server.CodeUnsupportedMediaType, msg: "text/plain"},
		{name: "previews as a form", method: "POST", target: "/v1/previews", body: "channels=" + demoChannel, header: []string{"Content-Type", "application/x-www-form-urlencoded"},
			status: 415, code: server.CodeUnsupportedMediaType},
		{name: "previews as application/json-seq", method: "POST", target: "/v1/previews", body: one, header: []string{"Content-Type", "application/json-seq"},
			status: 415, code: server.CodeUnsupportedMediaType},
		{name: "feed as text/plain", method: "POST", target: "/v1/feed", body: one, header: []string{"Content-Type", "text/plain; charset=utf-8"},
			status: 415, code: server.CodeUnsupportedMediaType},
		{name: "Content-Type sent twice", method: "POST", target: "/v1/previews", body: one, header: []string{"Content-Type", "application/json", "Content-Type", "text/plain"},
			status: 415, code: server.CodeUnsupportedMediaType, msg: "once"},
		{name: "charset other than UTF-8", method: "POST", target: "/v1/previews", body: one, header: []string{"Content-Type", "application/json; charset=iso-8859-1"},
			status: 415, code: server.CodeUnsupportedMediaType, msg: "UTF-8"},
		{name: "gzip content coding", method: "POST", target: "/v1/previews", body: one, header: []string{"Content-Encoding", "gzip"},
			status: 415, code: server.CodeUnsupportedMediaType, msg: "gzip"},
		{name: "charset=utf-8 is accepted", method: "POST", target: "/v1/previews", body: one, header: []string{"Content-Type", "application/json; charset=utf-8"},
			status: 200, check: onePreview},
		{name: "type and charset in other cases", method: "POST", target: "/v1/previews", body: one, header: []string{"Content-Type", `Application/JSON; Charset="UTF-8"`},
			status: 200, check: onePreview},

		// Trailing data.
		{name: "garbage after the object", method: "POST", target: "/v1/previews", body: one + " garbage",
			status: 400, code: server.CodeBadRequest, msg: "after the JSON object"},
		{name: "two objects", method: "POST", target: "/v1/previews", body: one + one,
			status: 400, code: server.CodeBadRequest, msg: "after the JSON object"},
		{name: "feed with a stray bracket after", method: "POST", target: "/v1/feed", body: one + "]",
			status: 400, code: server.CodeBadRequest, msg: "after the JSON object"},
		{name: "trailing whitespace is accepted", method: "POST", target: "/v1/previews", body: one + " \r\n\t\n",
			status: 200, check: onePreview},

		// Sizes.
		{name: "declared 1 GiB body, headers only",
			raw:    "POST /v1/previews HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n",
			status: 413, code: server.CodeTooLarge, closed: true, figure: "413 for declared 1 GiB body, time to answer"},
		{name: "declared 100 KiB body, headers only",
			raw:    "POST /v1/previews HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 102400\r\n\r\n",
			status: 413, code: server.CodeTooLarge, closed: true, figure: "413 for declared 100 KiB body (net/http would drain up to 256 KiB), time to answer"},
		{name: "declared 1 GiB body expecting 100-continue",
			raw:    "POST /v1/feed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 1073741824\r\n\r\n",
			status: 413, code: server.CodeTooLarge, closed: true, figure: "413 for declared 1 GiB body with Expect: 100-continue, time to answer"},
		{name: "declared body on a GET",
			raw:    "GET /v1/body/" + demoChannel + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n",
			status: 413, code: server.CodeTooLarge, closed: true},
		{name: "declared small body on a GET, never sent",
			raw:    "GET /v1/body/" + demoChannel + " HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n",
			status: 200, closed: true, figure: "GET with a declared 5-byte body never sent, time to answer"},
		{name: "declared small body on a HEAD, never sent",
			raw:    "HEAD /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n",
			status: 200, closed: true},
		{name: "chunked body past the limit, never finished",
			raw: "POST /v1/previews HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
				strconv.FormatInt(limit+1, 16) + "\r\n" + padJSON(t, one, limit+1) + "\r\n",
			status: 413, code: server.CodeTooLarge, closed: true, figure: "413 for unfinished chunked body past 64 KiB, time to answer"},
		{name: "chunked body one byte past the limit", method: "POST", target: "/v1/feed", body: padJSON(t, one, limit+1), chunked: true,
			status: 413, code: server.CodeTooLarge, closed: true},
		{name: "body of exactly the limit is accepted", method: "POST", target: "/v1/previews", body: padJSON(t, one, limit),
			status: 200, check: onePreview},
		{name: "body one byte past the limit", method: "POST", target: "/v1/previews", body: padJSON(t, one, limit+1),
			status: 413, code: server.CodeTooLarge, closed: true},

		// Types, fields and shapes.
		{name: "limit as a string", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "limit": "abc"}`,
			status: 400, code: server.CodeBadRequest, msg: `"limit" must be a whole number, not a string`},
		{name: "limit 1e40", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "limit": 1e40}`,
			status: 400, code: server.CodeBadRequest, msg: `"limit"`},
		{name: "limit 1.5", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "limit": 1.5}`,
			status: 400, code: server.CodeBadRequest, msg: `"limit"`},
		{name: "limit negative", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "limit": -1}`,
			status: 400, code: server.CodeBadRequest, msg: `"limit" must be from 0 to`},
		{name: "limit past the maximum", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "limit": 1099511627776}`,
			status: 400, code: server.CodeBadRequest, msg: `"limit" must be from 0 to`},
		{name: "order as a number", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "order": 5}`,
			status: 400, code: server.CodeBadRequest, msg: `"order" must be a string, not a number`},
		{name: "unknown order", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "order": "sideways"}`,
			status: 400, code: server.CodeBadRequest, msg: `"order"`},
		{name: "after as an object", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "after": {}}`,
			status: 400, code: server.CodeBadRequest, msg: `"after" must be a string, not an object`},
		{name: "forged cursor", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "after": "../../etc/passwd"}`,
			status: 400, code: server.CodeBadRequest, msg: "cursor"},
		{name: "channels as a string", method: "POST", target: "/v1/previews", body: `{"channels": "` + demoChannel + `"}`,
			status: 400, code: server.CodeBadRequest, msg: `"channels" must be a list of strings, not a string`},
		{name: "a number among the channels", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `", 7]}`,
			status: 400, code: server.CodeBadRequest, msg: `each item of "channels" must be a string, not a number`},
		{name: "unknown field in previews", method: "POST", target: "/v1/previews", body: `{"channels": ["` + demoChannel + `"], "chanels": []}`,
			status: 400, code: server.CodeBadRequest, msg: `unknown field "chanels"`},
		{name: "unknown field in feed", method: "POST", target: "/v1/feed", body: `{"channels": ["` + demoChannel + `"], "limt": 5}`,
			status: 400, code: server.CodeBadRequest, msg: `unknown field "limt"`},
		{name: "null body", method: "POST", target: "/v1/previews", body: "null",
			status: 400, code: server.CodeBadRequest, msg: "must be a JSON object, not null"},
		{name: "empty body", method: "POST", target: "/v1/feed", header: []string{"Content-Type", "application/json"},
			status: 400, code: server.CodeBadRequest, msg: "empty"},
		{name: "a list for a body", method: "POST", target: "/v1/previews", body: `["` + demoChannel + `"]`,
			status: 400, code: server.CodeBadRequest, msg: "not a list"},
		{name: "a string for a body", method: "POST", target: "/v1/feed", body: `"` + demoChannel + `"`,
			status: 400, code: server.CodeBadRequest, msg: "not a string"},
		{name: "cut-off object", method: "POST", target: "/v1/previews", body: `{"channels": ["` + demoChannel,
			status: 400, code: server.CodeBadRequest},
		{name: "deep nesting in an unknown field", method: "POST", target: "/v1/previews", body: `{"x": ` + deep + `}`,
			status: 400, code: server.CodeBadRequest},
		{name: "deep nesting in channels", method: "POST", target: "/v1/feed", body: `{"channels": ` + deep + `}`,
			status: 400, code: server.CodeBadRequest},
		{name: "invalid UTF-8", method: "POST", target: "/v1/previews", body: `{"channels": ["dur` + "\xff\xfe" + `ov"]}`,
			status: 400, code: server.CodeBadRequest, msg: "UTF-8"},
		{name: "raw NUL in a string", method: "POST", target: "/v1/previews", body: `{"channels": ["dur` + "\x00" + `ov"]}`,
			status: 400, code: server.CodeBadRequest, msg: "not valid JSON"},

		// Channel lists.
		{name: "previews with no channels", method: "POST", target: "/v1/previews", body: `{"channels": []}`,
			status: 400, code: server.CodeBadRequest, msg: `"channels"`},
		{name: "previews with null channels", method: "POST", target: "/v1/previews", body: `{"channels": null}`,
			status: 400, code: server.CodeBadRequest, msg: `"channels"`},
		{name: "feed with no channels", method: "POST", target: "/v1/feed", body: `{"channels": []}`,
			status: 400, code: server.CodeBadRequest, msg: `"channels"`},
		{name: "too many previews", method: "POST", target: "/v1/previews", body: `{"channels": ` + names("chan", server.MaxPreviews+1) + `}`,
			status: 400, code: server.CodeBadRequest, msg: strconv.Itoa(server.MaxPreviews)},
		{name: "too many feed channels", method: "POST", target: "/v1/feed", body: `{"channels": ` + names("chan", feed.DefaultMaxChannels+1) + `}`,
			status: 400, code: server.CodeBadRequest, msg: strconv.Itoa(feed.DefaultMaxChannels)},
		{name: "previews with one name many times", method: "POST", target: "/v1/previews",
			body:   `{"channels": ["` + demoChannel + `", "` + strings.ToUpper(demoChannel) + `", "` + demoChannel + `"]}`,
			status: 200, check: onePreview},
		{name: "feed with one name many times", method: "POST", target: "/v1/feed",
			body:   `{"channels": ["` + demoChannel + `", "` + strings.ToUpper(demoChannel) + `", "@` + demoChannel + `"], "limit": 5}`,
			status: 200, check: func(t *testing.T, a answer) {
				var out struct {
					Result []struct {
						ID      int `json:"id"`
						Channel struct {
							Username string `json:"username"`
						} `json:"channel"`
					} `json:"result"`
					Failed []json.RawMessage `json:"failed_channels"`
				}
				if err := json.Unmarshal(a.body, &out); err != nil {
					t.Fatalf("feed: %v", err)
				}
				seen := map[int]bool{}
				for _, p := range out.Result {
					if seen[p.ID] || p.Channel.Username != demoChannel {
						t.Errorf("post %d of %q: repeated or from another channel", p.ID, p.Channel.Username)
					}
					seen[p.ID] = true
				}
				if len(out.Result) == 0 || len(out.Failed) != 0 {
					t.Errorf("%d posts, %d failed channels; want posts and no failure", len(out.Result), len(out.Failed))
				}
			}},

		// Names.
		{name: "NUL in a previews name", method: "POST", target: "/v1/previews", body: `{"channels": ["dur\u0000ov"]}`,
			status: 200, check: nameFails},
		{name: "terminal escape in a previews name", method: "POST", target: "/v1/previews", body: `{"channels": ["\u001b[31mdurov"]}`,
			status: 200, check: nameFails},
		{name: "overlong previews name", method: "POST", target: "/v1/previews", body: `{"channels": ["` + strings.Repeat("a", 5000) + `"]}`,
			status: 200, check: nameFails},
		{name: "NUL in a path name", target: "/v1/body/%00durov",
			status: 400, code: server.CodeInvalidUsername},
		{name: "newline in a path name", target: "/v1/preview/dur%0Aov",
			status: 400, code: server.CodeInvalidUsername},
		{name: "33-character name", target: "/v1/body/" + strings.Repeat("a", 33),
			status: 400, code: server.CodeInvalidUsername, msg: "32"},
		{name: "4000-character name", target: "/v1/preview/" + strings.Repeat("a", 4000),
			status: 400, code: server.CodeInvalidUsername},

		// Path traversal.
		{name: "dot segments", raw: fmt.Sprintf(get, "/v1/body/../../etc/passwd"),
			status: 404, code: server.CodeNotFound},
		{name: "encoded slashes", target: "/v1/body/..%2F..%2Fetc%2Fpasswd",
			status: 400, code: server.CodeInvalidUsername},
		{name: "encoded dots", target: "/v1/preview/%2e%2e",
			status: 400, code: server.CodeInvalidUsername},
		{name: "dot segments as a post id", target: "/v1/post/" + demoChannel + "/..%2F1",
			status: 400, code: server.CodeInvalidPosition},

		// Query strings and positions.
		{name: "100 KiB query string", target: "/v1/body/" + demoChannel + "?position=1&pad=" + strings.Repeat("x", 100<<10),
			status: 414, code: server.CodeURITooLong},
		{name: "10 KiB path", target: "/v1/nothing/" + strings.Repeat("x", 10<<10),
			status: 414, code: server.CodeURITooLong},
		{name: "position given twice", target: "/v1/body/" + demoChannel + "?position=1&position=2",
			status: 400, code: server.CodeInvalidPosition, msg: "once"},
		{name: "negative position", target: "/v1/body/" + demoChannel + "?position=-1",
			status: 400, code: server.CodeInvalidPosition},
		{name: "position past int64", target: "/v1/body/" + demoChannel + "?position=99999999999999999999",
			status: 400, code: server.CodeInvalidPosition},
		{name: "position 1e40", target: "/v1/more/" + demoChannel + "/before/1e40",
			status: 400, code: server.CodeInvalidPosition},
		{name: "hex position", target: "/v1/more/" + demoChannel + "/after/0x10",
			status: 400, code: server.CodeInvalidPosition},
		{name: "negative post id", target: "/v1/post/" + demoChannel + "/-5",
			status: 400, code: server.CodeInvalidPosition},

		// Directions.
		{name: "direction sideways", target: "/v1/more/" + demoChannel + "/sideways/5",
			status: 400, code: server.CodeBadRequest, msg: "before or after"},
		{name: "direction in capitals", target: "/v1/more/" + demoChannel + "/BEFORE/5",
			status: 400, code: server.CodeBadRequest, msg: "before or after"},
		{name: "NUL direction", target: "/v1/more/" + demoChannel + "/%00/5",
			status: 400, code: server.CodeBadRequest},

		// Routes and methods.
		{name: "unknown route under /v1", target: "/v1/nothing",
			status: 404, code: server.CodeNotFound},
		{name: "unknown route at the root", target: "/nothing",
			status: 404, code: server.CodeNotFound},
		{name: "routes are case-sensitive", target: "/V1/BODY/" + demoChannel,
			status: 404, code: server.CodeNotFound},
		{name: "DELETE a channel page", method: "DELETE", target: "/v1/body/" + demoChannel,
			status: 405, code: server.CodeMethodNotAllowed, allow: "GET, HEAD"},
		{name: "GET previews", target: "/v1/previews",
			status: 405, code: server.CodeMethodNotAllowed, allow: "POST"},
		{name: "PUT feed", method: "PUT", target: "/v1/feed", body: one,
			status: 405, code: server.CodeMethodNotAllowed, allow: "POST"},
		{name: "OPTIONS previews", method: "OPTIONS", target: "/v1/previews",
			status: 405, code: server.CodeMethodNotAllowed, allow: "POST"},
		{name: "TRACE the playground", method: "TRACE", target: "/",
			status: 405, code: server.CodeMethodNotAllowed, allow: "GET, HEAD"},
		{name: "TRACE a channel page", method: "TRACE", target: "/v1/body/" + demoChannel,
			status: 405, code: server.CodeMethodNotAllowed, allow: "GET, HEAD"},
		{name: "TRACE GraphQL", method: "TRACE", target: "/graphql",
			status: 405, allow: "GET, HEAD, POST", check: func(t *testing.T, a answer) {
				wantGraphQLError(t, a.status, a.header, a.body, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
			}},
		{name: "TRACE an unknown route", method: "TRACE", target: "/v1/nothing",
			status: 404, code: server.CodeNotFound},
		{name: "CONNECT to a host", raw: "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
			status: 405, code: server.CodeMethodNotAllowed, allow: "GET, HEAD"},
		{name: "CONNECT a channel page", raw: "CONNECT /v1/body/" + demoChannel + " HTTP/1.1\r\nHost: x\r\n\r\n",
			status: 405, code: server.CodeMethodNotAllowed, allow: "GET, HEAD"},
		{name: "method chi does not know", method: "PROPFIND", target: "/v1/preview/" + demoChannel,
			status: 405, code: server.CodeMethodNotAllowed, allow: "GET, HEAD"},
		{name: "unknown method on an unknown route", method: "BREW", target: "/coffee",
			status: 404, code: server.CodeNotFound},
		{name: "HEAD a channel page", method: "HEAD", target: "/v1/body/" + demoChannel,
			status: 200, check: noBody},
		{name: "HEAD previews", method: "HEAD", target: "/v1/previews",
			status: 405, code: server.CodeMethodNotAllowed, allow: "POST"},
		{name: "HEAD an unknown route", method: "HEAD", target: "/v1/nothing",
			status: 404, code: server.CodeNotFound},
	}

	type figure struct {
		name string
		ms   float64
	}
	var figures []figure
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.origin.Total()
			a := sendAbuse(t, srv, c)
			if a.status != c.status {
				t.Fatalf("status %d, want %d; %.300s", a.status, c.status, a.body)
			}
			if c.code != "" {
				wantErrorShape(t, c, a)
			}
			if c.allow != "" {
				if got := a.header.Get("Allow"); got != c.allow {
					t.Errorf("Allow %q, want %q", got, c.allow)
				}
			}
			if c.closed && !a.closed {
				t.Errorf("the connection stayed open (Connection: %q)", a.header.Get("Connection"))
			}
			if c.status >= 400 {
				if n := e.origin.Total() - before; n != 0 {
					t.Errorf("the origin saw %d requests for a refused one", n)
				}
			}
			if c.check != nil {
				c.check(t, a)
			}
			if c.figure != "" {
				figures = append(figures, figure{c.figure, float64(a.elapsed.Microseconds()) / 1000})
			}
		})
	}
	t.Logf("FIGURE: rest | abuse cases | %d", len(cases))
	for _, f := range figures {
		t.Logf("FIGURE: rest | %s | %.2f ms", f.name, f.ms)
	}
}

// wantErrorShape checks an error answer is exactly
// {"error": {"code": ..., "message": ...}} with the case's code.
func wantErrorShape(t *testing.T, c abuseCase, a answer) {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := a.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	if c.method == http.MethodHead {
		noBody(t, a)
		return
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &outer); err != nil || len(outer) != 1 || outer["error"] == nil {
		t.Fatalf("body %.300q is not {\"error\": {...}} (%v)", a.body, err)
	}
	var inner map[string]string
	if err := json.Unmarshal(outer["error"], &inner); err != nil || len(inner) != 2 {
		t.Fatalf("error %s is not {\"code\", \"message\"} (%v)", outer["error"], err)
	}
	if inner["code"] != c.code {
		t.Errorf("code %q, want %q; message %q", inner["code"], c.code, inner["message"])
	}
	if inner["message"] == "" || !strings.Contains(inner["message"], c.msg) {
		t.Errorf("message %q, want one holding %q", inner["message"], c.msg)
	}
}

// sendAbuse sends one case over a fresh loopback connection and reads the
// answer.
func sendAbuse(t *testing.T, srv *httptest.Server, c abuseCase) answer {
	t.Helper()
	if c.raw != "" {
		return sendRaw(t, srv.Listener.Addr().String(), c.raw, c.closed)
	}
	method := c.method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
		if c.chunked {
			body = io.MultiReader(body) // hides the length from the client
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+c.target, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.body != "" && !c.noType {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(c.header); i += 2 {
		if i == 0 || c.header[i] != c.header[i-2] {
			req.Header.Del(c.header[i])
		}
		req.Header.Add(c.header[i], c.header[i+1])
	}
	// A fresh connection per case, so one case's answer cannot leave the
	// next on a connection the server is closing.
	tr := srv.Client().Transport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b, elapsed: elapsed, closed: resp.Close}
}

// rawGuard bounds how long a raw exchange may hang, so a server that waits
// for a body never sent fails the test instead of stalling it.
const rawGuard = 10 * time.Second

// sendRaw writes raw to a new connection and reads one answer, then, when
// askClosed, whether the server closes the connection.
func sendRaw(t *testing.T, addr, raw string, askClosed bool) answer {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(rawGuard)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	br := bufio.NewReader(conn)
	method, _, _ := strings.Cut(raw, " ")
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("no answer while the request's body was withheld: %v", err)
	}
	elapsed := time.Since(start)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	closed := false
	if askClosed {
		// Closed means end of stream (or a reset) right after the answer,
		// not the guard's timeout.
		_, err = br.ReadByte()
		var ne net.Error
		closed = err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b, elapsed: elapsed, closed: closed}
}

// Bodies are fully read before the answer is sent, so a small error on a
// body that arrived whole keeps the connection for the next request.
func TestRefusedReadBodyKeepsConnection(t *testing.T) {
	e := newNormalEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	a := sendRaw(t, srv.Listener.Addr().String(),
		"POST /v1/previews HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\nnull"+
			"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", true)
	if a.status != http.StatusBadRequest || a.closed {
		t.Fatalf("status %d, closed %v; want 400 on a connection kept open", a.status, a.closed)
	}
	if !bytes.Contains(a.body, []byte(server.CodeBadRequest)) {
		t.Errorf("body %s", a.body)
	}
}

// A client that sends a body over the limit in full, then reads, gets the
// 413 and a connection closed in order: the server takes in what it
// refused instead of resetting the connection under the client's feet.
func TestRefusedLargeBodyIsAnsweredNotReset(t *testing.T) {
	e := newNormalEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/v1/previews", "/graphql"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.SetDeadline(time.Now().Add(rawGuard)); err != nil {
			t.Fatal(err)
		}
		body := bytes.Repeat([]byte("a"), int(server.DefaultMaxRequestBytes)+100<<10)
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, len(body))
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		// The body goes out in pieces, as over a real network, after the
		// server has answered.
		time.Sleep(50 * time.Millisecond)
		for chunk := range slices.Chunk(body, 16<<10) {
			if _, err := conn.Write(chunk); err != nil {
				t.Fatalf("%s: sending the body: %v", path, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Past the time net/http waits before closing a connection whose
		// body it did not take in.
		time.Sleep(700 * time.Millisecond)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodPost})
		if err != nil {
			t.Fatalf("%s: no answer after sending the body: %v", path, err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: reading the answer: %v", path, err)
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: status %d, want 413", path, resp.StatusCode)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%s: after the answer: %v, want the connection closed in order (EOF)", path, err)
		}
		conn.Close()
	}
}

// connServer is the API over a real listener with the connection bounds,
// as cmd/tmefeed serves it.
func connServer(t *testing.T, lim server.ConnLimits) (*httptest.Server, *server.Listener) {
	t.Helper()
	e := newNormalEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := server.NewListener(ln, lim)
	srv := httptest.NewUnstartedServer(e.h)
	srv.Listener = l
	srv.Config.MaxHeaderBytes = server.MaxHeaderBytes
	srv.Config.ConnState = l.ConnState
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, l
}

// refusedConn reads the answer to a connection refused before any of its
// request was read: status, and the API's JSON error code.
func refusedConn(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("refused connection: %v", err)
	}
	defer resp.Body.Close()
	var b server.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatalf("refusal body: %v", err)
	}
	if resp.Header.Get("Retry-After") == "" || b.Error.Message == "" {
		t.Errorf("refusal %d %+v without Retry-After or message", resp.StatusCode, b.Error)
	}
	return resp.StatusCode, b.Error.Code
}

// TestAbuseConnections: open connections are bounded overall and per
// client, with a clear refusal; request headers are bounded per request
// (MaxHeaderBytes, sized to a 64 KiB GraphQL GET URL) and, while they are
// being read, over every connection together; places are given back as
// connections end and requests finish.
func TestAbuseConnections(t *testing.T) {
	dial := func(t *testing.T, srv *httptest.Server) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	waitStats := func(t *testing.T, l *server.Listener, ok func(server.ConnStats) bool) server.ConnStats {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // a bound on a broken server, not a measure
		for {
			s := l.Stats()
			if ok(s) || time.Now().After(deadline) {
				return s
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	t.Run("per client", func(t *testing.T) {
		srv, l := connServer(t, server.ConnLimits{PerClient: 3})
		held := []net.Conn{dial(t, srv), dial(t, srv), dial(t, srv)}
		waitStats(t, l, func(s server.ConnStats) bool { return s.Open == 3 })
		if status, code := refusedConn(t, dial(t, srv)); status != http.StatusTooManyRequests || code != server.CodeRateLimited {
			t.Errorf("4th connection: %d %s, want 429 rate_limited", status, code)
		}
		// The held ones are served, and one closed gives its place back.
		if _, err := held[0].Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		if resp, err := http.ReadResponse(bufio.NewReader(held[0]), nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("held connection: %v %v", resp, err)
		}
		held[1].Close()
		waitStats(t, l, func(s server.ConnStats) bool { return s.Open == 2 })
		c := dial(t, srv)
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("after one closed: %v %v", resp, err)
		}
	})

	t.Run("trusted proxy is not bound per client", func(t *testing.T) {
		srv, l := connServer(t, server.ConnLimits{PerClient: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
		dial(t, srv)
		dial(t, srv)
		if s := waitStats(t, l, func(s server.ConnStats) bool { return s.Open == 2 }); s.Open != 2 || s.Refused != 0 {
			t.Errorf("two connections from a trusted proxy: %+v", s)
		}
	})

	t.Run("overall", func(t *testing.T) {
		srv, l := connServer(t, server.ConnLimits{Max: 2})
		dial(t, srv)
		dial(t, srv)
		waitStats(t, l, func(s server.ConnStats) bool { return s.Open == 2 })
		if status, code := refusedConn(t, dial(t, srv)); status != http.StatusServiceUnavailable || code != server.CodeUnavailable {
			t.Errorf("3rd connection: %d %s, want 503 upstream_unavailable", status, code)
		}
	})

	t.Run("header size", func(t *testing.T) {
		srv, _ := connServer(t, server.ConnLimits{})
		addr := srv.Listener.Addr().String()
		// The longest URL served, as a GraphQL GET sends it, is read and
		// answered by the router (414 just past it), not refused by net/http.
		long := "/graphql?query=" + strings.Repeat("x", 64<<10-len("/graphql?query="))
		if a := sendRaw(t, addr, "GET "+long+" HTTP/1.1\r\nHost: x\r\nUser-Agent: "+strings.Repeat("u", 2000)+"\r\nConnection: close\r\n\r\n", false); a.status == http.StatusRequestHeaderFieldsTooLarge || a.status == 0 {
			t.Errorf("a 64 KiB URL: %d, want it read", a.status)
		}
		// 1 MiB of header lines is refused long before the end.
		// (Written beside the read: the server answers and closes while the
		// rest is still being sent.)
		c := dial(t, srv)
		go func() {
			_, _ = c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("a", 1000)+"\r\n", 1024) + "\r\n"))
		}()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("1 MiB of headers: %v %v, want 431", resp, err)
		}
	})

	t.Run("header bytes in progress", func(t *testing.T) {
		const budget = 256 << 10
		srv, l := connServer(t, server.ConnLimits{HeaderBytes: budget})
		// Unfinished header blocks of 48 KiB each: five fit, the sixth
		// goes over and is refused; the others still finish and are served.
		part := "GET /healthz HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("a", 1000)+"\r\n", 48)
		var conns []net.Conn
		for range 5 {
			c := dial(t, srv)
			if _, err := c.Write([]byte(part)); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		s := waitStats(t, l, func(s server.ConnStats) bool { return s.HeaderBytes >= int64(5*len(part)) })
		if s.HeaderBytes != int64(5*len(part)) {
			t.Fatalf("header bytes held %d, want %d", s.HeaderBytes, 5*len(part))
		}
		over := dial(t, srv)
		_, _ = over.Write([]byte(part))
		if status, code := refusedConn(t, over); status != http.StatusServiceUnavailable || code != server.CodeUnavailable {
			t.Errorf("over the header bytes: %d %s, want 503", status, code)
		}
		for i, c := range conns {
			if _, err := c.Write([]byte("Connection: close\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("connection %d within the bound: %v %v", i, resp, err)
			}
		}
		if s := waitStats(t, l, func(s server.ConnStats) bool { return s.HeaderBytes == 0 && s.Open == 0 }); s.HeaderBytes != 0 || s.Open != 0 {
			t.Errorf("after every request: %+v, want nothing held", s)
		}
	})

	t.Run("keep-alive requests give their header bytes back", func(t *testing.T) {
		srv, l := connServer(t, server.ConnLimits{HeaderBytes: 4 << 10, PerClient: 4, Max: 8})
		c := dial(t, srv)
		br := bufio.NewReader(c)
		for i := range 200 { // 200 × ~600 bytes: far past the bound, were they not given back
			if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 500) + "\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("request %d: %v %v", i, resp, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if s := l.Stats(); s.HeaderBytes != 0 || s.Refused != 0 || s.Open != 1 {
			t.Errorf("after 200 requests on one connection: %+v", s)
		}
	})
}
