package main

import (
	"io"
	"runtime/debug"
	"strings"
	"testing"
)

func TestSplitBudget(t *testing.T) {
	for _, mb := range []int64{1, 16, 64, 1024} {
		total := mb << 20
		b := splitBudget(total, 100)
		sum := b.Pages + b.Hot + b.Parsed + b.Builds + b.Rendered + b.APQ + b.Queries + b.Answers
		if sum > total || sum < total-8 {
			t.Errorf("%d MiB: shares add up to %d B", mb, sum)
		}
		if b.Pages != total*4/10 {
			t.Errorf("%d MiB: pages get %d B, want 40%%", mb, b.Pages)
		}
	}
	if got := splitBudget(16<<20, 100).BuildingPages; got != 100 {
		t.Errorf("16 MiB: %d building pages, want one feed of 100", got)
	}
	if got := splitBudget(256<<20, 100).BuildingPages; got != 1024 {
		t.Errorf("256 MiB: %d building pages, want a quarter of the budget at 64 KiB each = 1024", got)
	}
	if got := splitBudget(16<<20, 100).AnswerValues; got != minAnswerValues {
		t.Errorf("16 MiB: room for %d answer values, want %d", got, minAnswerValues)
	}
	if got := splitBudget(256<<20, 100).AnswerValues; got != 256<<20/4/answerValueBytes {
		t.Errorf("256 MiB: room for %d answer values, want a quarter of the budget at %d B each", got, answerValueBytes)
	}
}

func TestMemoryLimitSetting(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })
	parse := func(vars map[string]string) (serveConfig, error) {
		return parseServeConfig(nil, env(vars), io.Discard)
	}
	for _, bad := range []string{"0", "-5", "lots"} {
		if _, err := parse(map[string]string{"MEMORY_LIMIT_MB": bad}); err == nil || !strings.Contains(err.Error(), "$MEMORY_LIMIT_MB") {
			t.Errorf("MEMORY_LIMIT_MB=%s: err = %v", bad, err)
		}
	}

	cfg, err := parse(map[string]string{"MEMORY_CACHE_MAX_MB": "16"})
	if err != nil {
		t.Fatal(err)
	}
	if got := applyMemoryLimit(cfg, env(nil)); got != 128<<20 || debug.SetMemoryLimit(-1) != 128<<20 {
		t.Errorf("default limit at 16 MiB: applied %d, runtime %d; want 4×16+64 MiB", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(orig)
	if got := applyMemoryLimit(cfg, env(map[string]string{"GOMEMLIMIT": "1GiB"})); got != 0 || debug.SetMemoryLimit(-1) != orig {
		t.Errorf("with GOMEMLIMIT set and no MEMORY_LIMIT_MB the runtime's limit must stay: applied %d", got)
	}
	cfg, err = parse(map[string]string{"MEMORY_LIMIT_MB": "300", "GOMEMLIMIT": "1GiB"})
	if err != nil {
		t.Fatal(err)
	}
	if got := applyMemoryLimit(cfg, env(map[string]string{"GOMEMLIMIT": "1GiB"})); got != 300<<20 || debug.SetMemoryLimit(-1) != 300<<20 {
		t.Errorf("MEMORY_LIMIT_MB=300: applied %d", got)
	}
}
