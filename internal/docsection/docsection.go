// Package docsection rewrites the generated part of a document: the text
// between a begin and an end marker, for the tools that keep a table of
// docs/*.md true (tools/capacity, tools/paths).
package docsection

import (
	"fmt"
	"strings"
)

// Replace puts text between the markers begin and end of doc, keeping the
// markers and everything outside them.
func Replace(doc, begin, end, text string) (string, error) {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %s … %s section", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + text + doc[j:], nil
}
