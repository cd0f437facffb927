package checkpoint

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamdb/streamdb/sqlerr"
)

// step is one event on a fake clock, at t0+at: a failure (with the expected
// answer) or, with running set, a report of healthy running since then.
type step struct {
	at      time.Duration
	running bool
	delay   time.Duration
	ok      bool
	reason  string
}

func fail(at, delay time.Duration) step { return step{at: at, delay: delay, ok: true} }
func exhausted(at time.Duration, reason string) step {
	return step{at: at, reason: reason}
}
func running(at time.Duration) step { return step{at: at, running: true} }

func TestBackoff(t *testing.T) {
	const s, m = time.Second, time.Minute
	fixed := func(attempts int, delay time.Duration) RestartConfig {
		return RestartConfig{Strategy: RestartFixedDelay, Attempts: attempts, Delay: delay}
	}
	rate := func(max int, interval, delay time.Duration) RestartConfig {
		return RestartConfig{Strategy: RestartFailureRate, MaxFailures: max, FailureInterval: interval, Delay: delay}
	}
	expo := func(initial, max time.Duration, mult float64, attempts int) RestartConfig {
		return RestartConfig{Strategy: RestartExponentialDelay, InitialDelay: initial, MaxDelay: max,
			Multiplier: mult, ResetAfter: time.Minute, Attempts: attempts}
	}
	tests := []struct {
		name     string
		cfg      RestartConfig
		steps    []step
		restarts int
	}{
		{"fixed-delay: exactly 3 restarts, then FAILED for good", fixed(3, 10*s), []step{
			fail(0, 10*s), fail(11*s, 10*s), fail(22*s, 10*s),
			exhausted(33*s, "restart strategy fixed-delay exhausted after 3 attempts"),
			exhausted(time.Hour, "restart strategy fixed-delay exhausted after 3 attempts"),
		}, 3},
		{"fixed-delay: a healthy hour does not give attempts back", fixed(2, s), []step{
			fail(0, s), running(s), fail(2*time.Hour, s),
			exhausted(4*time.Hour, "restart strategy fixed-delay exhausted after 2 attempts"),
		}, 2},
		{"fixed-delay: 0 attempts fails at once", fixed(0, s), []step{
			exhausted(0, "restart strategy fixed-delay exhausted after 0 attempts"),
		}, 0},
		{"failure-rate: the 4th failure within 5min is one too many", rate(3, 5*m, 10*s), []step{
			fail(0, 10*s), fail(1*m, 10*s), fail(2*m, 10*s),
			exhausted(3*m, "restart strategy failure-rate exhausted: 4 failures within 5min (max_failures 3)"),
			exhausted(time.Hour, "restart strategy failure-rate exhausted: 4 failures within 5min (max_failures 3)"),
		}, 3},
		{"failure-rate: the window slides; its end is inclusive", rate(3, 5*m, 10*s), []step{
			fail(0, 10*s), fail(2*m, 10*s), fail(4*m, 10*s),
			fail(5*m+time.Millisecond, 10*s), // the failure at 0 is just outside
			exhausted(7*m, "restart strategy failure-rate exhausted: 4 failures within 5min (max_failures 3)"),
		}, 4},
		{"failure-rate: one failure per minute is allowed forever", rate(1, m, 0), []step{
			fail(0, 0), fail(61*s, 0), fail(122*s, 0), fail(183*s, 0),
			exhausted(183*s+m, "restart strategy failure-rate exhausted: 2 failures within 1min (max_failures 1)"),
		}, 4},
		{"exponential-delay: doubles up to the cap", expo(s, 10*s, 2, 0), []step{
			fail(0, s), fail(2*s, 2*s), fail(5*s, 4*s), fail(10*s, 8*s), fail(19*s, 10*s), fail(30*s, 10*s),
		}, 6},
		{"exponential-delay: fractional multiplier truncates like Flink", expo(s, m, 1.5, 0), []step{
			fail(0, s), fail(2*s, 1500*time.Millisecond), fail(4*s, 2250*time.Millisecond),
			fail(7*s, 3375*time.Millisecond),
		}, 4},
		{"exponential-delay: resets after a healthy minute, not before", expo(s, 10*s, 2, 0), []step{
			fail(0, s), fail(2*s, 2*s), // restart at 4s
			fail(4*s+m-time.Millisecond, 4*s), // restart at 1m7.999s
			fail(8*s+2*m, s),                  // healthy ≥ 1min since then: back to initial
			fail(8*s+2*m+2*s, 2*s),
		}, 5},
		{"exponential-delay: Running moves the start of healthy running", expo(s, 10*s, 2, 0), []step{
			fail(0, s), fail(2*s, 2*s), // restart at 4s
			running(30 * s),
			fail(64*s, 4*s), // 64s-30s < 1min: no reset; restart at 68s
			running(70 * s),
			fail(130*s, s), // 130s-70s = 1min: reset
		}, 4},
		{"exponential-delay: a failure before the pending restart is merged", expo(s, 10*s, 2, 0), []step{
			fail(0, s), fail(400*time.Millisecond, 600*time.Millisecond), fail(s, 0),
			fail(1500*time.Millisecond, 2*s),
		}, 2},
		{"exponential-delay: attempts bound restarts between resets", expo(s, 10*s, 2, 2), []step{
			fail(0, s), fail(2*s, 2*s), // restart at 4s
			fail(4*s+m, s), // reset: attempts start again; restart at 65s
			fail(66*s, 2*s),
			exhausted(69*s, "restart strategy exponential-delay exhausted after 2 attempts"),
			exhausted(time.Hour, "restart strategy exponential-delay exhausted after 2 attempts"),
		}, 4},
		{"none: FAILED at once", RestartConfig{Strategy: RestartNone}, []step{
			exhausted(0, "restart strategy none: the job is not restarted"),
		}, 0},
	}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBackoff(tc.cfg, rand.New(rand.NewPCG(1, 2)))
			for i, st := range tc.steps {
				if st.running {
					b.Running(t0.Add(st.at))
					continue
				}
				d, ok, reason := b.Failed(t0.Add(st.at))
				if d != st.delay || ok != st.ok || reason != st.reason {
					t.Fatalf("step %d (failure at +%v): got (%v, %v, %q), want (%v, %v, %q)",
						i, st.at, d, ok, reason, st.delay, st.ok, st.reason)
				}
			}
			if got := b.Restarts(); got != tc.restarts {
				t.Errorf("Restarts() = %d, want %d", got, tc.restarts)
			}
			last := tc.steps[len(tc.steps)-1]
			if got := b.Exhausted(); got != last.reason {
				t.Errorf("Exhausted() = %q, want %q", got, last.reason)
			}
		})
	}
}

func TestBackoffUnboundedDefault(t *testing.T) {
	b := NewBackoff(DefaultRestartConfig(true), nil)
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 10000; i++ {
		d, ok, reason := b.Failed(now)
		if d != time.Second || !ok || reason != "" {
			t.Fatalf("failure %d: got (%v, %v, %q), want (1s, true, \"\")", i+1, d, ok, reason)
		}
		now = now.Add(time.Millisecond) // many failures in a burst change nothing
	}
	if b.Restarts() != 10000 {
		t.Errorf("Restarts() = %d, want 10000", b.Restarts())
	}
	if _, ok, _ := NewBackoff(DefaultRestartConfig(false), nil).Failed(now); ok {
		t.Error("without checkpoints the default strategy restarted a job")
	}
}

// TestBackoffJitter checks that jitter stays within ±Jitter of the
// un-jittered delay, never leaves [initial, max], and is reproducible from
// a seed (the exact values pin the draw from math/rand/v2's PCG).
func TestBackoffJitter(t *testing.T) {
	cfg := RestartConfig{Strategy: RestartExponentialDelay, InitialDelay: time.Second, MaxDelay: time.Minute,
		Multiplier: 2, Jitter: 0.1, ResetAfter: time.Hour}
	run := func(seed uint64) []time.Duration {
		b := NewBackoff(cfg, rand.New(rand.NewPCG(seed, 7)))
		now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		var out []time.Duration
		for range 12 {
			d, ok, _ := b.Failed(now)
			if !ok {
				t.Fatal("exponential-delay without attempts gave up")
			}
			out = append(out, d)
			now = now.Add(d + time.Second)
		}
		return out
	}
	got := run(42)
	base := time.Second
	for i, d := range got {
		lo, hi := max(base-base/10, cfg.InitialDelay), min(base+base/10, cfg.MaxDelay)
		if d < lo || d > hi {
			t.Errorf("delay %d = %v, want within [%v, %v]", i+1, d, lo, hi)
		}
		base = min(2*base, cfg.MaxDelay)
	}
	if again := run(42); !slices.Equal(again, got) {
		t.Fatalf("same seed, different delays: %v vs %v", got, again)
	}
	if other := run(43); slices.Equal(other, got) {
		t.Errorf("different seeds gave identical jittered delays %v", got)
	}
	// Pinned: the draws of math/rand/v2's PCG(42, 7), in whole milliseconds.
	var pinned []time.Duration
	for _, ms := range []int{1044, 2006, 4073, 8754, 16415, 33127, 54547, 59568, 59733, 60000, 60000, 57503} {
		pinned = append(pinned, time.Duration(ms)*time.Millisecond)
	}
	if !slices.Equal(got, pinned) {
		t.Errorf("delays %v, want %v", got, pinned)
	}
}

func TestParseRestartConfig(t *testing.T) {
	defaults := RestartConfig{Strategy: RestartFixedDelay, Attempts: UnboundedAttempts, Delay: time.Second,
		MaxFailures: 1, FailureInterval: time.Minute, InitialDelay: time.Second, MaxDelay: 5 * time.Minute,
		Multiplier: 2, Jitter: 0.1, ResetAfter: time.Hour}
	with := func(f func(*RestartConfig)) RestartConfig { c := defaults; f(&c); return c }
	tests := []struct {
		name     string
		settings map[string]string
		want     RestartConfig
		err      string // "": success; else the error message, and its detail after " / "
	}{
		{"nothing set: fixed-delay, unbounded", nil, defaults, ""},
		{"fixed-delay as the DESIGN example", map[string]string{"strategy": "fixed-delay", "attempts": "3", "delay": "10s"},
			with(func(c *RestartConfig) { c.Attempts, c.Delay = 3, 10*time.Second }), ""},
		{"failure-rate, Flink spellings", map[string]string{"strategy": "FAILURE_RATE", "max_failures": "3",
			"failure_interval": "5 min", "delay": "10 s"},
			with(func(c *RestartConfig) {
				c.Strategy, c.MaxFailures, c.FailureInterval, c.Delay = RestartFailureRate, 3, 5*time.Minute, 10*time.Second
			}), ""},
		{"exponential-delay", map[string]string{"strategy": "exponential-delay", "initial_delay": "500ms",
			"max_delay": "1min", "multiplier": "1.5", "jitter": "0", "reset_after": "30min"},
			with(func(c *RestartConfig) {
				c.Strategy, c.InitialDelay, c.MaxDelay, c.Multiplier, c.Jitter, c.ResetAfter =
					RestartExponentialDelay, 500*time.Millisecond, time.Minute, 1.5, 0, 30*time.Minute
			}), ""},
		{"none", map[string]string{"strategy": " None "}, with(func(c *RestartConfig) { c.Strategy = RestartNone }), ""},
		{"initial above max is fine when not exponential", map[string]string{"initial_delay": "10min"},
			with(func(c *RestartConfig) { c.InitialDelay = 10 * time.Minute }), ""},

		{"unknown strategy", map[string]string{"strategy": "forever"}, RestartConfig{},
			`invalid value for parameter "restart.strategy": "forever" / allowed values: fixed-delay, failure-rate, exponential-delay, none`},
		{"negative attempts", map[string]string{"attempts": "-1"}, RestartConfig{},
			`invalid value for parameter "restart.attempts": "-1" / expected an integer from 0 to 2147483647`},
		{"attempts not a number", map[string]string{"attempts": "three"}, RestartConfig{},
			`invalid value for parameter "restart.attempts": "three" / expected an integer from 0 to 2147483647`},
		{"zero max_failures", map[string]string{"max_failures": "0"}, RestartConfig{},
			`invalid value for parameter "restart.max_failures": "0" / expected an integer from 1 to 1000000`},
		{"bad unit", map[string]string{"delay": "10 fortnights"}, RestartConfig{},
			`invalid value for parameter "restart.delay": "10 fortnights" / unknown duration unit "fortnights" (use ms, s, min, h, d)`},
		{"negative interval", map[string]string{"failure_interval": "-5s"}, RestartConfig{},
			`invalid value for parameter "restart.failure_interval": "-5s" / expected a duration such as 500ms, 10s, 5min, 1h`},
		{"multiplier below 1", map[string]string{"multiplier": "0.5"}, RestartConfig{},
			`invalid value for parameter "restart.multiplier": "0.5" / expected a number from 1 to 1e+09`},
		{"jitter above 1", map[string]string{"jitter": "1.5"}, RestartConfig{},
			`invalid value for parameter "restart.jitter": "1.5" / expected a number from 0 to 1`},
		{"initial above max", map[string]string{"strategy": "exponential-delay", "initial_delay": "10min"}, RestartConfig{},
			`restart.initial_delay (10min) must not exceed restart.max_delay (5min)`},
		{"zero reset_after", map[string]string{"strategy": "exponential-delay", "reset_after": "0"}, RestartConfig{},
			`invalid value for parameter "restart.reset_after": "0" / expected a duration greater than 0`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRestartConfig(func(k string) (string, bool) {
				v, ok := tc.settings[k]
				return v, ok
			})
			if tc.err == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got != tc.want {
					t.Fatalf("got %+v\nwant %+v", got, tc.want)
				}
				return
			}
			var se *sqlerr.Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *sqlerr.Error", err)
			}
			msg := se.Msg
			if se.Detail != "" {
				msg += " / " + se.Detail
			}
			if se.Code != sqlerr.InvalidParameterValue || msg != tc.err {
				t.Fatalf("got %s %q, want 22023 %q", se.Code, msg, tc.err)
			}
		})
	}
}

func TestRestartConfigString(t *testing.T) {
	def := DefaultRestartConfig(true)
	tests := []struct {
		cfg  RestartConfig
		want string
	}{
		{def, "fixed-delay(attempts=unbounded, delay=1s)"},
		{RestartConfig{Strategy: RestartFixedDelay, Attempts: 3, Delay: 10 * time.Second}, "fixed-delay(attempts=3, delay=10s)"},
		{RestartConfig{Strategy: RestartFailureRate, MaxFailures: 3, FailureInterval: 5 * time.Minute, Delay: 250 * time.Millisecond},
			"failure-rate(max_failures=3, failure_interval=5min, delay=250ms)"},
		{RestartConfig{Strategy: RestartExponentialDelay, InitialDelay: time.Second, MaxDelay: 5 * time.Minute,
			Multiplier: 2, Jitter: 0.1, ResetAfter: time.Hour},
			"exponential-delay(initial_delay=1s, max_delay=5min, multiplier=2, jitter=0.1, reset_after=1h, attempts=unbounded)"},
		{DefaultRestartConfig(false), "none"},
	}
	for _, tc := range tests {
		if got := tc.cfg.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	if !strings.HasPrefix(def.String(), def.Strategy) {
		t.Errorf("String() %q does not start with the strategy name", def.String())
	}
}
