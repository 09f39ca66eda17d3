// Package parser reads t.me pages with a single pass of the x/net/html
// Tokenizer and returns the domain model in model.go.
package parser

import "errors"

var (
	// ErrNotChannel: the page is a preview of a user, group, bot or unknown name.
	ErrNotChannel = errors.New("parser: not a public channel")
	// ErrPostNotFound: an embed page that shows Telegram's "post not found" message.
	ErrPostNotFound = errors.New("parser: post not found")
	// ErrNotPage: the bytes are not a t.me page of the expected kind.
	ErrNotPage = errors.New("parser: not a t.me page of the expected kind")
)
