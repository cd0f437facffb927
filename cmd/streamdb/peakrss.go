package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// The benchmarks that run several cases in one process (bench backends,
// bench nexmark) report each case's peak RSS. The kernel's high-water mark
// (VmHWM, getrusage's ru_maxrss) only grows, so without a reset each case
// reported the largest peak of any case before it: a memory-backend
// GROUP BY run after the Pebble Nexmark runs showed their 1 GB.

// resetPeakRSS starts a new peak: it returns the heap that earlier cases
// freed to the system (debug.FreeOSMemory), then sets the process's
// high-water mark to its current RSS by writing 5 to /proc/self/clear_refs
// (Linux 4.0 and later). It returns the error if the reset is not
// possible, in which case peakRSSMB is the process's peak so far.
func resetPeakRSS() error {
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMB is the process's resident high-water mark (VmHWM) in MB since
// the last resetPeakRSS; getrusage's (never reset) where /proc is missing.
func peakRSSMB() float64 {
	if kb, ok := procStatusKB("VmHWM:"); ok {
		return kb / 1024
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // kilobytes on Linux
}

// rssMB is the process's current resident set size in MB (0 if unknown).
func rssMB() float64 {
	kb, _ := procStatusKB("VmRSS:")
	return kb / 1024
}

// procStatusKB reads a "NAME:  N kB" field of /proc/self/status.
func procStatusKB(field string) (float64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb, err == nil
		}
	}
	return 0, false
}

// noteResetPeakRSS resets the peak before a case and returns the RSS it
// starts from (what earlier cases left resident counts in the case's
// peak); the first time the reset fails, it says that the figures are the
// process's peak so far.
func noteResetPeakRSS() float64 {
	if err := resetPeakRSS(); err != nil && !peakResetWarned {
		peakResetWarned = true
		fmt.Fprintf(os.Stderr, "peak RSS cannot be reset (%v): each figure is the process's peak so far\n", err)
	}
	return rssMB()
}

var peakResetWarned bool
