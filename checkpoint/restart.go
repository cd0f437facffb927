package checkpoint

// Restart strategies decide whether and when a failed job is restarted from
// its latest committed checkpoint. They follow Flink's
// RestartBackoffTimeStrategy implementations (flink-runtime
// executiongraph/failover): the supervisor reports each failure with the
// time it happened and gets back either a delay before the restart or
// "exhausted", after which the job is FAILED until START JOB or a restore.
//
// This file is pure logic: times are passed in, randomness comes from the
// caller, so tests drive it with a fake clock and a seeded source.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streamdb/streamdb/sqlerr"
)

// Restart strategy names, as SET restart.strategy spells them.
const (
	RestartFixedDelay       = "fixed-delay"
	RestartFailureRate      = "failure-rate"
	RestartExponentialDelay = "exponential-delay"
	RestartNone             = "none"
)

// UnboundedAttempts is Flink's Integer.MAX_VALUE: the attempt count used when
// checkpointing is on and no strategy was configured.
const UnboundedAttempts = math.MaxInt32

// RestartConfig is a restart strategy with its parameters. Only the fields
// of the chosen strategy matter.
type RestartConfig struct {
	Strategy string // RestartFixedDelay, RestartFailureRate, RestartExponentialDelay or RestartNone

	// fixed-delay: Attempts restarts, Delay apart. Also the exponential-delay
	// cap on attempts since the last backoff reset (0: unbounded).
	Attempts int
	// fixed-delay and failure-rate: the pause before each restart.
	Delay time.Duration

	// failure-rate: the job fails when more than MaxFailures failures fall
	// within FailureInterval.
	MaxFailures     int
	FailureInterval time.Duration

	// exponential-delay: the n-th restart since a reset waits
	// min(InitialDelay*Multiplier^n, MaxDelay), ±Jitter of that, never less
	// than InitialDelay.
	InitialDelay, MaxDelay time.Duration
	Multiplier, Jitter     float64
	// ResetAfter is the healthy running period after which the backoff goes
	// back to InitialDelay (Flink: reset-backoff-threshold).
	ResetAfter time.Duration
}

// Defaults, the same as sql/settings.go's (which are Flink's, with the
// exponential-delay values of Flink up to 1.18) plus Flink's one-hour
// reset-backoff-threshold, which has no SET key.
var restartDefaults = map[string]string{
	"strategy":         RestartFixedDelay,
	"attempts":         strconv.Itoa(UnboundedAttempts),
	"delay":            "1s",
	"max_failures":     "1",
	"failure_interval": "1min",
	"initial_delay":    "1s",
	"max_delay":        "5min",
	"multiplier":       "2.0",
	"jitter":           "0.1",
	"reset_after":      "1h",
}

// DefaultRestartConfig is the strategy of a job for which nothing is set:
// fixed-delay with unbounded attempts when checkpointing is on, none when
// it is off (Flink's rule: without checkpoints a restart would lose state).
func DefaultRestartConfig(checkpointing bool) RestartConfig {
	if !checkpointing {
		return RestartConfig{Strategy: RestartNone}
	}
	c, _ := ParseRestartConfig(func(string) (string, bool) { return "", false })
	return c
}

// ParseRestartConfig builds a config from settings. get looks a key up
// without its "restart." prefix ("strategy", "attempts", "delay",
// "max_failures", "failure_interval", "initial_delay", "max_delay",
// "multiplier", "jitter", "reset_after") and returns the value as the user
// wrote it or as sql/settings.go normalized it ("10s", "5min", "3", "2.0");
// a missing key takes its default. An invalid value is a 22023 error naming
// the parameter and what it allows, worded like SET's own.
func ParseRestartConfig(get func(key string) (string, bool)) (RestartConfig, error) {
	val := func(key string) string {
		if v, ok := get(key); ok {
			return v
		}
		return restartDefaults[key]
	}
	var c RestartConfig
	var err error
	if c.Strategy, err = parseStrategy(val("strategy")); err != nil {
		return c, badParam("strategy", val("strategy"), err)
	}
	ints := []struct {
		key    string
		dst    *int
		lo, hi int
	}{
		{"attempts", &c.Attempts, 0, UnboundedAttempts},
		{"max_failures", &c.MaxFailures, 1, 1000000},
	}
	for _, f := range ints {
		v, err := strconv.ParseInt(strings.TrimSpace(val(f.key)), 10, 64)
		if err != nil || v < int64(f.lo) || v > int64(f.hi) {
			return c, badParam(f.key, val(f.key), fmt.Errorf("expected an integer from %d to %d", f.lo, f.hi))
		}
		*f.dst = int(v)
	}
	durs := []struct {
		key string
		dst *time.Duration
	}{
		{"delay", &c.Delay},
		{"failure_interval", &c.FailureInterval},
		{"initial_delay", &c.InitialDelay},
		{"max_delay", &c.MaxDelay},
		{"reset_after", &c.ResetAfter},
	}
	for _, f := range durs {
		if *f.dst, err = ParseDuration(val(f.key)); err != nil {
			return c, badParam(f.key, val(f.key), err)
		}
	}
	floats := []struct {
		key    string
		dst    *float64
		lo, hi float64
	}{
		{"multiplier", &c.Multiplier, 1, 1e9},
		{"jitter", &c.Jitter, 0, 1},
	}
	for _, f := range floats {
		v, err := strconv.ParseFloat(strings.TrimSpace(val(f.key)), 64)
		if err != nil || v < f.lo || v > f.hi {
			return c, badParam(f.key, val(f.key), fmt.Errorf("expected a number from %g to %g", f.lo, f.hi))
		}
		*f.dst = v
	}
	// Flink checks these when the job is submitted; only the exponential
	// strategy reads them, so only it is refused for them.
	if c.Strategy == RestartExponentialDelay {
		if c.InitialDelay > c.MaxDelay {
			return c, &sqlerr.Error{Code: sqlerr.InvalidParameterValue,
				Msg: fmt.Sprintf("restart.initial_delay (%s) must not exceed restart.max_delay (%s)",
					FormatDuration(c.InitialDelay), FormatDuration(c.MaxDelay))}
		}
		if c.ResetAfter <= 0 {
			return c, badParam("reset_after", val("reset_after"), fmt.Errorf("expected a duration greater than 0"))
		}
	}
	return c, nil
}

func parseStrategy(s string) (string, error) {
	l := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
	switch l {
	case RestartFixedDelay, RestartFailureRate, RestartExponentialDelay, RestartNone:
		return l, nil
	}
	return "", fmt.Errorf("allowed values: %s, %s, %s, %s",
		RestartFixedDelay, RestartFailureRate, RestartExponentialDelay, RestartNone)
}

func badParam(key, value string, err error) error {
	return &sqlerr.Error{Code: sqlerr.InvalidParameterValue,
		Msg:    fmt.Sprintf("invalid value for parameter %q: %q", "restart."+key, value),
		Detail: err.Error()}
}

// ParseDuration reads durations as Flink and PostgreSQL users write them:
// "500ms", "1s", "10 s", "5min", "1 h", "2d"; a bare number is milliseconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("expected a duration such as 500ms, 10s, 5min, 1h")
	}
	var mul time.Duration
	switch unit {
	case "", "ms", "msec", "millisecond", "milliseconds":
		mul = time.Millisecond
	case "us", "microsecond", "microseconds":
		mul = time.Microsecond
	case "s", "sec", "secs", "second", "seconds":
		mul = time.Second
	case "m", "min", "mins", "minute", "minutes":
		mul = time.Minute
	case "h", "hour", "hours":
		mul = time.Hour
	case "d", "day", "days":
		mul = 24 * time.Hour
	default:
		return 0, fmt.Errorf("unknown duration unit %q (use ms, s, min, h, d)", unit)
	}
	// Far beyond any useful delay, and keeps jitter arithmetic from overflowing.
	if v*float64(mul) > math.MaxInt64/4 {
		return 0, fmt.Errorf("duration out of range")
	}
	return time.Duration(v * float64(mul)), nil
}

// FormatDuration writes d the way SHOW prints settings: "10s", "5min", "250ms".
func FormatDuration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}} {
		if d != 0 && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	if d%time.Millisecond == 0 {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return d.String()
}

func formatAttempts(n int) string {
	if n >= UnboundedAttempts {
		return "unbounded"
	}
	return strconv.Itoa(n)
}

// String describes the strategy for SHOW JOBS, e.g.
// "fixed-delay(attempts=3, delay=10s)".
func (c RestartConfig) String() string {
	switch c.Strategy {
	case RestartFixedDelay:
		return fmt.Sprintf("fixed-delay(attempts=%s, delay=%s)", formatAttempts(c.Attempts), FormatDuration(c.Delay))
	case RestartFailureRate:
		return fmt.Sprintf("failure-rate(max_failures=%d, failure_interval=%s, delay=%s)",
			c.MaxFailures, FormatDuration(c.FailureInterval), FormatDuration(c.Delay))
	case RestartExponentialDelay:
		attempts := "unbounded"
		if c.Attempts > 0 {
			attempts = formatAttempts(c.Attempts)
		}
		return fmt.Sprintf("exponential-delay(initial_delay=%s, max_delay=%s, multiplier=%g, jitter=%g, reset_after=%s, attempts=%s)",
			FormatDuration(c.InitialDelay), FormatDuration(c.MaxDelay), c.Multiplier, c.Jitter,
			FormatDuration(c.ResetAfter), attempts)
	}
	return c.Strategy
}

// Backoff tracks one job's failures and decides its restarts. It is safe
// for concurrent use: the supervisor reports failures while SHOW JOBS reads
// Restarts.
type Backoff struct {
	cfg RestartConfig
	rnd *rand.Rand // nil: the global source

	mu struct {
		sync.Mutex
		restarts  int    // restarts granted in total
		attempt   int    // fixed-delay: failures; exponential: restarts since the last reset
		exhausted string // the reason, once the strategy has given up
		// failure-rate: times of the latest failures, at most MaxFailures+1.
		failures []time.Time
		// exponential-delay: when the pending restart happens (zero: none
		// yet) and when the job was last known to start running healthily.
		nextRestart  time.Time
		runningSince time.Time
	}
}

// NewBackoff starts tracking a job under cfg. rnd draws the exponential
// jitter; nil uses the global source, a seeded one makes delays
// reproducible.
func NewBackoff(cfg RestartConfig, rnd *rand.Rand) *Backoff {
	return &Backoff{cfg: cfg, rnd: rnd}
}

// Config returns the strategy b follows.
func (b *Backoff) Config() RestartConfig { return b.cfg }

// Failed records a failure at now and returns the delay before the next
// restart, or ok=false with the reason when the strategy is exhausted (the
// job becomes FAILED). Once exhausted, b stays so.
func (b *Backoff) Failed(now time.Time) (delay time.Duration, ok bool, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.exhausted != "" {
		return 0, false, b.mu.exhausted
	}
	c := &b.cfg
	switch c.Strategy {
	case RestartFixedDelay:
		// Flink FixedDelayRestartBackoffTimeStrategy: count, then allow
		// while the count is at most the attempts.
		b.mu.attempt++
		if b.mu.attempt > c.Attempts {
			return b.giveUpLocked(fmt.Sprintf("restart strategy fixed-delay exhausted after %d attempts", c.Attempts))
		}
		delay = c.Delay
	case RestartFailureRate:
		// Flink FailureRateRestartBackoffTimeStrategy: keep the latest
		// MaxFailures+1 failure times; give up when all of them fall
		// within the interval.
		if len(b.mu.failures) > c.MaxFailures {
			b.mu.failures = append(b.mu.failures[:0], b.mu.failures[1:]...)
		}
		b.mu.failures = append(b.mu.failures, now)
		if len(b.mu.failures) > c.MaxFailures && now.Sub(b.mu.failures[0]) <= c.FailureInterval {
			return b.giveUpLocked(fmt.Sprintf("restart strategy failure-rate exhausted: %d failures within %s (max_failures %d)",
				len(b.mu.failures), FormatDuration(c.FailureInterval), c.MaxFailures))
		}
		delay = c.Delay
	case RestartExponentialDelay:
		return b.exponentialLocked(now)
	default: // none
		return b.giveUpLocked("restart strategy none: the job is not restarted")
	}
	b.mu.restarts++
	return delay, true, ""
}

// exponentialLocked follows Flink's ExponentialDelayRestartBackoffTimeStrategy
// (1.19): a failure while a restart is still pending is the same failure
// and is merged into it; after ResetAfter of healthy running the attempt
// count, and so the delay, starts again.
func (b *Backoff) exponentialLocked(now time.Time) (time.Duration, bool, string) {
	c := &b.cfg
	if !b.mu.nextRestart.IsZero() && !now.After(b.mu.nextRestart) {
		return b.mu.nextRestart.Sub(now), true, ""
	}
	if !b.mu.nextRestart.IsZero() {
		// Healthy since the restart, or since Running said so if later.
		since := b.mu.nextRestart
		if b.mu.runningSince.After(since) {
			since = b.mu.runningSince
		}
		if now.Sub(since) >= c.ResetAfter {
			b.mu.attempt = 0
		}
	}
	if c.Attempts > 0 && b.mu.attempt >= c.Attempts {
		return b.giveUpLocked(fmt.Sprintf("restart strategy exponential-delay exhausted after %d attempts", c.Attempts))
	}
	delay := b.exponentialDelayLocked()
	b.mu.attempt++
	b.mu.restarts++
	b.mu.nextRestart = now.Add(delay)
	return delay, true, ""
}

// exponentialDelayLocked is max(initial, min(base ± jitter*base, max)) with
// base = initial*multiplier^attempt, as Flink computes it.
func (b *Backoff) exponentialDelayLocked() time.Duration {
	c := &b.cfg
	f := float64(c.InitialDelay) * math.Pow(c.Multiplier, float64(b.mu.attempt))
	base := c.MaxDelay
	if f < float64(c.MaxDelay) {
		base = time.Duration(f)
	}
	d := base
	// Whole milliseconds, uniform in [-off, off], as Flink draws it.
	if off := int64(float64(base.Milliseconds()) * c.Jitter); off > 0 {
		var j int64
		if b.rnd != nil {
			j = b.rnd.Int64N(2*off+1) - off
		} else {
			j = rand.Int64N(2*off+1) - off
		}
		d += time.Duration(j) * time.Millisecond
	}
	return max(c.InitialDelay, min(d, c.MaxDelay))
}

func (b *Backoff) giveUpLocked(reason string) (time.Duration, bool, string) {
	b.mu.exhausted = reason
	return 0, false, reason
}

// Running records that the job has been running healthily since t (for
// example, its first checkpoint after a restart completed). Under
// exponential-delay, a failure ResetAfter or more after t starts the
// backoff again from InitialDelay. Without Running, the restart time
// counts as the start of healthy running, as in Flink.
func (b *Backoff) Running(since time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.runningSince = since
}

// Restarts returns how many restarts b has granted.
func (b *Backoff) Restarts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.restarts
}

// Exhausted returns why the strategy gave up, or "" while it has not.
func (b *Backoff) Exhausted() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.exhausted
}
