package main

import (
	"runtime"
	"testing"
)

// TestResetPeakRSS: after a case that touched 256 MB and freed it,
// resetPeakRSS brings the peak back down, so the next case does not
// report the earlier one's.
func TestResetPeakRSS(t *testing.T) {
	if err := resetPeakRSS(); err != nil {
		t.Skipf("VmHWM cannot be reset here: %v", err)
	}
	high := func() float64 { // a case: 256 MB touched, then garbage
		b := make([]byte, 256<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		defer runtime.KeepAlive(b)
		return peakRSSMB()
	}()
	if err := resetPeakRSS(); err != nil {
		t.Fatal(err)
	}
	after := peakRSSMB()
	t.Logf("peak RSS %.0f MB with 256 MB touched, %.0f MB after it was freed and the peak reset", high, after)
	if after > high-128 {
		t.Errorf("peak RSS after the reset %.0f MB, want at most %.0f MB (256 MB under the %.0f MB peak, less slack)", after, high-128, high)
	}
}
