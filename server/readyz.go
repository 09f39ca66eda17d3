package server

import (
	"context"
	"net/http"
	"time"
)

// Readiness states of one check.
const (
	ReadyOK       = "ok"       // working
	ReadyDegraded = "degraded" // not working as configured, but answers are served
	ReadyDown     = "down"     // answers cannot be served: /readyz fails
)

// ReadyCheck is one part of /readyz.
type ReadyCheck struct {
	Name  string
	Check func(context.Context) CheckResult
}

// CheckResult is one check's state and what it saw.
type CheckResult struct {
	Status string         `json:"status"` // ReadyOK, ReadyDegraded or ReadyDown
	Detail string         `json:"detail,omitempty"`
	Data   map[string]any `json:"data,omitempty"`
}

// readyTimeout bounds all checks of one /readyz.
const readyTimeout = 2 * time.Second

// readyz answers 200 when every check is ok or degraded, else 503, with
// each check's result: {"status": "ready"|"degraded"|"not_ready",
// "checks": {name: result}}.
func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	out := struct {
		Status string                 `json:"status"`
		Checks map[string]CheckResult `json:"checks"`
	}{Status: "ready", Checks: make(map[string]CheckResult, len(h.ready))}
	code := http.StatusOK
	for _, c := range h.ready {
		res := c.Check(ctx)
		switch res.Status {
		case ReadyOK:
		case ReadyDegraded:
			if out.Status == "ready" {
				out.Status = "degraded"
			}
		default:
			res.Status = ReadyDown
			out.Status, code = "not_ready", http.StatusServiceUnavailable
		}
		out.Checks[c.Name] = res
	}
	b, err := EncodeJSON(out, false)
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
