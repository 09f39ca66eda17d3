package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/tme"
)

// maxParseInput bounds what parse reads; real pages are far smaller.
const maxParseInput = 64 << 20

// runParse implements `tmefeed parse [--kind body|more|preview|embed] FILE|-`:
// it prints a saved t.me page as the REST API would answer it.
func runParse(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("parse", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "page kind: body, more, preview, embed or search (detected when omitted)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tmefeed parse [--kind body|more|preview|embed|search] FILE|-")
		fmt.Fprintln(stderr, "Prints the page as the REST API's JSON; - reads standard input.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errUsage
	}
	name := fs.Arg(0)

	var in io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	b, err := io.ReadAll(io.LimitReader(in, maxParseInput+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > maxParseInput {
		return fmt.Errorf("%s: larger than %d bytes", name, maxParseInput)
	}

	k := tme.Kind(*kind)
	if k == "" {
		if k = parser.Detect(b); k == "" {
			return fmt.Errorf("%s: cannot tell what kind of t.me page this is; pass --kind", name)
		}
	}
	v, err := parseAs(k, b)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	out, err := server.EncodeJSON(v, true)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// parseAs parses b as kind and returns the value the REST API would encode.
func parseAs(kind tme.Kind, b []byte) (any, error) {
	switch kind {
	case tme.KindBody:
		p, err := parser.ParseBody(b)
		if err != nil {
			return nil, err
		}
		return server.BodyView(p), nil
	case tme.KindMore:
		p, err := parser.ParseMore(b)
		if err != nil {
			return nil, err
		}
		return server.MoreView(p), nil
	case tme.KindPreview:
		p, err := parser.ParsePreview(b)
		if err != nil {
			return nil, err
		}
		return &server.PreviewResponse{Channel: p}, nil
	case tme.KindEmbed:
		return parser.ParseEmbed(b)
	case tme.KindSearch:
		p, err := parser.ParseSearch(b)
		if err != nil {
			return nil, err
		}
		return server.BodyView(p), nil
	}
	return nil, errors.New("unknown --kind " + string(kind) + "; want body, more, preview, embed or search")
}
