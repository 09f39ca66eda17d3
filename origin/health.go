package origin

import (
	"errors"
	"time"
)

// HostHealth is what a Client knows of one origin host through one egress.
type HostHealth struct {
	Egress  string // Egress.Name
	Host    string
	Breaker string    // "closed", "half-open" or "open"
	Answer  time.Time // the last answer (a page, or a definitive 404); zero if none yet
}

// Health reports, for each egress in the order configured, the primary
// host, then the fallback if configured.
func (c *Client) Health() []HostHealth {
	var hs []*host
	for _, eg := range c.egresses {
		hs = append(hs, eg.primary)
		if eg.fallback != nil {
			hs = append(hs, eg.fallback)
		}
	}
	out := make([]HostHealth, 0, len(hs))
	for _, h := range hs {
		hh := HostHealth{Egress: h.eg.name, Host: h.name, Breaker: h.cb.State().String()}
		if n := h.lastAnswer.Load(); n != 0 {
			hh.Answer = time.Unix(0, n)
		}
		out = append(out, hh)
	}
	return out
}

// outcomeName names the result of one request to a host, for Config.Observe:
// "ok", "not_found", "rate_limited", "timeout", "refused", "unreachable",
// "reset", "truncated", "server_error" or "error". The set is fixed, so it
// can label metrics.
func outcomeName(rateLimited bool, err error) string {
	switch {
	case rateLimited:
		return "rate_limited"
	case err == nil:
		return "ok"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrRefused):
		return "refused"
	case errors.Is(err, ErrUnreachable):
		return "unreachable"
	case errors.Is(err, ErrReset):
		return "reset"
	case errors.Is(err, ErrTruncated):
		return "truncated"
	case errors.Is(err, ErrServerError):
		return "server_error"
	}
	return "error"
}
