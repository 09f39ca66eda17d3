package tme

import (
	"errors"
	"strings"
	"testing"
)

func TestRequestPathMethodAndKey(t *testing.T) {
	tests := []struct {
		r      Request
		path   string
		method string
		key    string
	}{
		{Request{Kind: KindBody, Channel: "durov"}, "/s/durov", "GET", "tme:v2:page:{durov}:body:0"},
		{Request{Kind: KindBody, Channel: "durov", Position: 42}, "/s/durov/42", "GET", "tme:v2:page:{durov}:body:42"},
		{Request{Kind: KindMore, Channel: "durov", Position: 123}, "/s/durov?before=123", "POST", "tme:v2:page:{durov}:more:before:123"},
		{Request{Kind: KindMore, Channel: "durov", Position: 123, After: true}, "/s/durov?after=123", "POST", "tme:v2:page:{durov}:more:after:123"},
		{Request{Kind: KindPreview, Channel: "durov"}, "/durov", "GET", "tme:v2:page:{durov}:preview"},
		{Request{Kind: KindEmbed, Channel: "durov", Position: 5}, "/durov/5?embed=1", "GET", "tme:v2:page:{durov}:embed:5"},
		{Request{Kind: KindSearch, Channel: "durov", Query: "a b&c"}, "/s/durov?q=a+b%26c", "GET", "tme:v2:page:{durov}:search:a+b%26c"},
	}
	for _, tt := range tests {
		if got := tt.r.Path(); got != tt.path {
			t.Errorf("%+v Path = %q, want %q", tt.r, got, tt.path)
		}
		if got := tt.r.Method(); got != tt.method {
			t.Errorf("%+v Method = %q, want %q", tt.r, got, tt.method)
		}
		if got := tt.r.Key(); got != tt.key {
			t.Errorf("%+v Key = %q, want %q", tt.r, got, tt.key)
		}
		if got, want := tt.r.Name(), tt.key[strings.LastIndex(tt.key, "}:")+2:]; got != want {
			t.Errorf("%+v Name = %q, want the key's last part %q", tt.r, got, want)
		}
		if err := tt.r.Validate(); err != nil {
			t.Errorf("%+v Validate = %v", tt.r, err)
		}
	}
}

// Who a request is for and whether it may only read the cache do not make
// it another page.
func TestKeyIsThePageAlone(t *testing.T) {
	plain := Request{Kind: KindBody, Channel: "durov", Position: 7}
	asked := Request{Kind: KindBody, Channel: "durov", Position: 7, Class: ClassHistory, Client: "192.0.2.1", CacheOnly: true}
	if plain.Key() != asked.Key() {
		t.Errorf("keys %q and %q differ for one page", plain.Key(), asked.Key())
	}
}

// A search's text is the user's own: errors show its path without it.
func TestShownHidesTheSearchText(t *testing.T) {
	r := Request{Kind: KindSearch, Channel: "durov", Query: "my secret"}
	if got := r.Shown(); strings.Contains(got, "secret") || !strings.HasPrefix(got, "/s/durov?q=") {
		t.Errorf("Shown = %q", got)
	}
	body := Request{Kind: KindBody, Channel: "durov", Position: 3}
	if body.Shown() != body.Path() {
		t.Errorf("Shown = %q, Path = %q", body.Shown(), body.Path())
	}
}

func TestValidateRefusesMalformedRequests(t *testing.T) {
	bad := []Request{
		{Kind: KindBody, Channel: ""},
		{Kind: KindBody, Channel: "Durov"},
		{Kind: KindBody, Channel: "du/../rov"},
		{Kind: KindBody, Channel: "durov?x=1"},
		{Kind: KindBody, Channel: strings.Repeat("x", 65)},
		{Kind: KindBody, Channel: "durov", Position: -1},
		{Kind: KindMore, Channel: "durov"},
		{Kind: KindEmbed, Channel: "durov"},
		{Kind: KindSearch, Channel: "durov"},
		{Kind: KindSearch, Channel: "durov", Query: "x", Position: 2},
		{Kind: "weird", Channel: "durov"},
	}
	for _, r := range bad {
		if err := r.Validate(); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: Validate = %v, want ErrInvalidRequest", r, err)
		}
	}
}
