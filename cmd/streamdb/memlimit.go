package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/streamdb/streamdb/exec/plan"
)

// memoryLimitConfig reads --memory-limit (flag, if not empty) or the config
// file's memory_limit (taken out of settings: it is the server's, not a
// database setting) and splits it (plan.SplitMemoryLimit). No limit gives
// the zero split.
func memoryLimitConfig(flagVal string, settings map[string]string) (plan.MemorySplit, error) {
	v, from := flagVal, "--memory-limit"
	if fv, ok := settings["memory_limit"]; ok {
		delete(settings, "memory_limit")
		if v == "" {
			v, from = fv, "memory_limit in --config"
		}
	}
	if strings.TrimSpace(v) == "" {
		return plan.MemorySplit{}, nil
	}
	n, err := parseByteSize(v)
	if err != nil {
		return plan.MemorySplit{}, fmt.Errorf("%s %q: %w", from, v, err)
	}
	s, err := plan.SplitMemoryLimit(n)
	if err != nil {
		return plan.MemorySplit{}, fmt.Errorf("%s %q: %w", from, v, err)
	}
	return s, nil
}

// parseByteSize reads a byte count: a bare number of bytes, or a number
// with kB, MB, GB or TB (powers of 1024, case-insensitive, as PostgreSQL's
// memory units).
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		shift  uint
	}{{"tb", 40}, {"gb", 30}, {"mb", 20}, {"kb", 10}, {"b", 0}}
	shift := uint(0)
	lower := strings.ToLower(t)
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			t, shift = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("expected a positive number of bytes, or of kB, MB, GB or TB")
	}
	return n << shift, nil
}
