package graph_test

import (
	"encoding/json"
	"testing"

	"github.com/tmefeed/tmefeed/web"
)

// The playground's example queries run against this schema without errors.
func TestPlaygroundExamplesRun(t *testing.T) {
	e := newEnv(t, envOptions{})
	for i, tab := range web.Examples(recorded) {
		var vars map[string]any
		if tab.Variables != "" {
			if err := json.Unmarshal([]byte(tab.Variables), &vars); err != nil {
				t.Fatalf("tab %d: variables %q: %v", i, tab.Variables, err)
			}
		}
		r := e.query(t, tab.Query, vars)
		if len(r.Errors) > 0 || len(r.Data) < 20 {
			t.Errorf("tab %d: %s %+v\n%s", i, r.Data, r.Errors, tab.Query)
		}
	}
}
