package sql

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/sqlerr"
)

// Database settings persist across restarts and apply to every session;
// they are validated here and read by the coordinator at every round.
type settingDef struct {
	def   string
	check func(string) (string, error) // returns the normalized value
}

var dbSettings = map[string]settingDef{
	"checkpoint.interval":           {"1s", durationOrOff},
	"barrier.interval":              {"100ms", positiveDuration},
	"checkpoint.mode":               {"exactly_once", oneOf("exactly_once", "at_least_once")},
	"checkpoint.min_pause":          {"0ms", duration},
	"checkpoint.timeout":            {"60s", duration},
	"checkpoint.max_concurrent":     {"1", intRange(1, 1)},
	"checkpoint.retained":           {"20", intRange(1, 1000)},
	"checkpoint.tolerable_failures": {"0", intRange(0, 1000)},
	"checkpoint.cleanup":            {"retain_on_cancellation", oneOf("retain_on_cancellation", "delete_on_cancellation")},
	"checkpoint.dir":                {"", anyValue},
	"checkpoint.dirs":               {"", anyValue},
	"checkpoint.storage":            {"", storageURL},
	"savepoint.storage":             {"", storageURL},
	"state.backend":                 {"pebble", oneOf("pebble", "memory")},
	"state.memory_limit":            {"0", memoryLimit},
	"restart.strategy":              {"fixed-delay", oneOf("fixed-delay", "failure-rate", "exponential-delay", "none")},
	"restart.attempts":              {"2147483647", intRange(0, 2147483647)},
	"restart.delay":                 {"1s", duration},
	"restart.max_failures":          {"1", intRange(1, 1000000)},
	"restart.failure_interval":      {"1min", duration},
	"restart.initial_delay":         {"1s", duration},
	"restart.max_delay":             {"5min", duration},
	"restart.multiplier":            {"2.0", floatMin(1)},
	"restart.jitter":                {"0.1", floatRange(0, 1)},
	"restart.reset_after":           {"1h", positiveDuration},
	"job.error_policy":              {"skip", oneOf("skip", "fail")},
	"stream.retention":              {"unbounded", durationOrUnbounded},
	"state.ttl":                     {"off", durationOrOff}, // idle join keys expire (statettl.go)
	"stream.idle_timeout":           {"off", durationOrOff},
	"job.late_rows":                 {"drop", oneOf("drop", "record")},
	"job.memory_limit":              {"auto", jobMemoryLimit},
}

// Session settings that drivers send; accepted and reported by SHOW.
var sessionDefaults = map[string]string{
	"client_encoding":                     "UTF8",
	"datestyle":                           "ISO, MDY",
	"timezone":                            "UTC",
	"extra_float_digits":                  "1",
	"application_name":                    "",
	"search_path":                         `"$user", public`,
	"statement_timeout":                   "0",
	"lock_timeout":                        "0",
	"idle_in_transaction_session_timeout": "0",
	"intervalstyle":                       "postgres",
	"standard_conforming_strings":         "on",
	"transaction_isolation":               "read committed",
	"default_transaction_isolation":       "read committed",
	"client_min_messages":                 "notice",
	"bytea_output":                        "hex",
	"server_version":                      "15.0",
	"server_version_num":                  "150000",
	"server_encoding":                     "UTF8",
	"integer_datetimes":                   "on",
	"max_identifier_length":               "63",
	"session_characteristics":             "",
	"jit":                                 "off",
	"row_security":                        "on",
	"default_transaction_read_only":       "off",
	"transaction_read_only":               "off",
	"is_superuser":                        "on",
	"work_mem":                            "1GB", // one batch query's operator memory (query.go)
	"background_ddl":                      "off", // CREATE MATERIALIZED VIEW returns before its backfill (backfill.go)
}

// sessionChecks validate session settings when SET; each returns the
// normalized value, or an error that is the message's hint.
var sessionChecks = map[string]func(string) (string, error){
	"work_mem":       memorySetting,
	"background_ddl": boolSetting,
}

// memorySetting accepts a PostgreSQL memory value: an integer with a unit
// (B, kB, MB, GB, TB) or without one (kB), from 64kB to 2147483647kB.
func memorySetting(s string) (string, error) {
	n, err := parseMemory(s)
	if err != nil {
		return "", err
	}
	return plan.FormatMemory(n), nil
}

// parseMemory parses a memory setting into bytes.
func parseMemory(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	unitHint := fmt.Errorf(`Valid units for this parameter are "B", "kB", "MB", "GB", and "TB"; a number without a unit is kB.`)
	if i == 0 {
		return 0, unitHint
	}
	v, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, unitHint
	}
	shift := map[string]uint{"": 10, "b": 0, "kb": 10, "mb": 20, "gb": 30, "tb": 40}
	sh, ok := shift[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, unitHint
	}
	const lo, hi = 64 << 10, 2147483647 << 10
	if v > hi>>sh || v<<sh < lo {
		return 0, fmt.Errorf("%s is outside the valid range for parameter \"work_mem\" (64kB .. 2147483647kB)", s)
	}
	return v << sh, nil
}

// Server settings are fixed when the server starts (--max-connections or
// the config file): SHOW reports them, SET and RESET refuse them (55P02),
// and the wire server enforces them (Engine.ConnectionLimits).
var serverSettings = map[string]settingDef{
	"max_connections":                {"100", intRange(1, 100000)},
	"superuser_reserved_connections": {"3", intRange(0, 100000)},
}

var readOnly = map[string]bool{"server_version": true, "server_version_num": true, "server_encoding": true, "integer_datetimes": true, "max_identifier_length": true,
	"is_superuser": true}

// ownedPrefix reports whether prefix is the first part of a setting
// streamdb defines (checkpoint.interval, stream.retention, query.memory_mb,
// ...): SET of a name under it that is not one of them is 42602, as
// PostgreSQL refuses unknown names under a loaded extension's reserved
// prefix, rather than a custom session variable a typo would silently set.
func ownedPrefix(prefix string) bool {
	if p, _, _ := strings.Cut(queryMemoryKey, "."); prefix == p {
		return true
	}
	for name := range dbSettings {
		if p, _, _ := strings.Cut(name, "."); prefix == p {
			return true
		}
	}
	return false
}

func validateSetting(name, value string) (string, error) {
	d, ok := dbSettings[name]
	if !ok {
		d, ok = serverSettings[name]
	}
	if !ok {
		return "", sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", name)
	}
	v, err := d.check(value)
	if err != nil {
		return "", &sqlerr.Error{Code: sqlerr.InvalidParameterValue,
			Msg: fmt.Sprintf("invalid value for parameter %q: %q", name, value), Detail: err.Error()}
	}
	return v, nil
}

func anyValue(s string) (string, error) { return s, nil }

func oneOf(vals ...string) func(string) (string, error) {
	return func(s string) (string, error) {
		l := strings.ToLower(strings.TrimSpace(s))
		for _, v := range vals {
			if l == v || strings.ReplaceAll(l, "-", "_") == strings.ReplaceAll(v, "-", "_") {
				return v, nil
			}
		}
		return "", fmt.Errorf("allowed values: %s", strings.Join(vals, ", "))
	}
}

func intRange(lo, hi int64) func(string) (string, error) {
	return func(s string) (string, error) {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || v < lo || v > hi {
			return "", fmt.Errorf("expected an integer from %d to %d", lo, hi)
		}
		return strconv.FormatInt(v, 10), nil
	}
}

func floatMin(lo float64) func(string) (string, error) { return floatRange(lo, 1e9) }

func floatRange(lo, hi float64) func(string) (string, error) {
	return func(s string) (string, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || v < lo || v > hi {
			return "", fmt.Errorf("expected a number from %g to %g", lo, hi)
		}
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	}
}

func duration(s string) (string, error) {
	d, err := checkpoint.ParseDuration(s)
	if err != nil {
		return "", err
	}
	return checkpoint.FormatDuration(d), nil
}

func positiveDuration(s string) (string, error) {
	d, err := checkpoint.ParseDuration(s)
	if err != nil || d <= 0 {
		return "", fmt.Errorf("expected a duration greater than 0, such as 30s, 5min, 1h")
	}
	return checkpoint.FormatDuration(d), nil
}

func durationOrOff(s string) (string, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	if l == "off" || l == "0" || l == "none" {
		return "off", nil
	}
	return duration(s)
}

func durationOrUnbounded(s string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(s), "unbounded") {
		return "unbounded", nil
	}
	if _, err := duration(s); err != nil {
		return "", fmt.Errorf("expected 'unbounded' or a duration such as 0s, 10min, 7d")
	}
	return duration(s)
}

// setting returns a database setting's effective value: SET, else the
// config file, else the default.
func (e *settingsStore) setting(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.settingLocked(name)
}

func (e *settingsStore) settingLocked(name string) string {
	if v, ok := e.mu.settings[name]; ok {
		return v
	}
	if v, ok := e.mu.fileConf[name]; ok {
		v, _ = validateSetting(name, v)
		return v
	}
	if d, ok := dbSettings[name]; ok {
		return d.def
	}
	return serverSettings[name].def
}

// ConnectionLimits returns max_connections and
// superuser_reserved_connections, for the wire server to enforce. As in
// PostgreSQL the reserved slots must leave at least one for everybody else.
func (e *Engine) ConnectionLimits() (maxConns, reserved int, err error) {
	maxConns, _ = strconv.Atoi(e.conf.setting("max_connections"))
	reserved, _ = strconv.Atoi(e.conf.setting("superuser_reserved_connections"))
	if reserved >= maxConns {
		return 0, 0, sqlerr.New(sqlerr.InvalidParameterValue,
			"superuser_reserved_connections (%d) must be less than max_connections (%d)", reserved, maxConns)
	}
	return maxConns, reserved, nil
}

// errRestartOnly refuses to SET or RESET a server setting.
func errRestartOnly(name string) error {
	return sqlerr.New(sqlerr.CantChangeRuntimeParam, "parameter %q cannot be changed without restarting the server", name)
}

// maxTimeoutMillis is the largest statement_timeout, as in PostgreSQL (an
// int4 of milliseconds).
const maxTimeoutMillis = 1<<31 - 1

// timeoutUnits are PostgreSQL's time units for a setting kept in
// milliseconds, largest first (formatMillis picks the largest that fits).
var timeoutUnits = []struct {
	name string
	ms   float64
}{{"d", 86400000}, {"h", 3600000}, {"min", 60000}, {"s", 1000}, {"ms", 1}, {"us", 0.001}}

// normalizeTimeout checks a statement_timeout value as PostgreSQL reads it:
// a plain number is milliseconds, or a number with a unit ('2s', '1min',
// '500ms', '1.5h'); 0 turns the timeout off. It returns the value as SHOW
// prints it, in the largest unit that keeps it whole ('2000' is '2s').
func normalizeTimeout(name, value string) (string, error) {
	v := strings.TrimSpace(value)
	num, unit := v, ""
	if i := strings.IndexFunc(v, func(r rune) bool { return r != '.' && r != '-' && r != '+' && (r < '0' || r > '9') }); i >= 0 {
		num, unit = strings.TrimSpace(v[:i]), strings.TrimSpace(v[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	scale := 1.0
	if err == nil && unit != "" {
		scale = 0
		for _, u := range timeoutUnits {
			if unit == u.name {
				scale = u.ms
			}
		}
		if scale == 0 {
			return "", &sqlerr.Error{Code: sqlerr.InvalidParameterValue,
				Msg:  fmt.Sprintf("invalid value for parameter %q: %q", name, value),
				Hint: `Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".`}
		}
	}
	if err != nil || num == "" {
		return "", sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter %q: %q", name, value)
	}
	ms := math.Round(f * scale)
	if ms < 0 || ms > maxTimeoutMillis {
		return "", sqlerr.New(sqlerr.InvalidParameterValue,
			"%s ms is outside the valid range for parameter %q (0 .. %d)", strconv.FormatFloat(ms, 'f', -1, 64), name, maxTimeoutMillis)
	}
	return formatMillis(int64(ms)), nil
}

// formatMillis prints a millisecond count as SHOW does for PostgreSQL's
// time settings: in the largest unit that divides it, bare 0 for zero.
func formatMillis(ms int64) string {
	if ms == 0 {
		return "0"
	}
	for _, u := range timeoutUnits {
		if u.ms >= 1 && ms%int64(u.ms) == 0 {
			return strconv.FormatInt(ms/int64(u.ms), 10) + u.name
		}
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// millisSetting reads a value normalized by normalizeTimeout back.
func millisSetting(v string) time.Duration {
	for _, u := range timeoutUnits {
		if n, ok := strings.CutSuffix(v, u.name); ok && u.ms >= 1 {
			if i, err := strconv.ParseInt(n, 10, 64); err == nil {
				return time.Duration(i) * time.Duration(u.ms) * time.Millisecond
			}
		}
	}
	return 0
}

func (e *settingsStore) setSetting(name, value string, reset bool) error {
	if fileOnly[name] {
		return sqlerr.New(sqlerr.CantChangeRuntimeParam, "parameter %q can only be set in the server's config file", name)
	}
	if !reset {
		v, err := validateSetting(name, value)
		if err != nil {
			return err
		}
		value = v
		if strings.HasPrefix(name, "restart.") {
			// The database-wide combination must hold too.
			e.mu.Lock()
			old, had := e.mu.settings[name]
			e.mu.settings[name] = value
			_, err := e.sup.restartConfigLocked(nil)
			if had {
				e.mu.settings[name] = old
			} else {
				delete(e.mu.settings, name)
			}
			e.mu.Unlock()
			if err != nil {
				return err
			}
		}
		if name == "checkpoint.dir" {
			e.mu.Lock()
			err := e.checkLocationLocked(value)
			e.mu.Unlock()
			if err != nil {
				return err
			}
		}
		if name == "checkpoint.storage" || name == "savepoint.storage" {
			e.mu.Lock()
			err := e.checkStorageLocked(name, value)
			e.mu.Unlock()
			if err != nil {
				return err
			}
		}
	} else if _, ok := dbSettings[name]; !ok {
		return sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if err := e.db.Catalog().PutSetting(name, value, reset); err != nil {
		return err
	}
	e.mu.Lock()
	if reset {
		delete(e.mu.settings, name)
	} else {
		e.mu.settings[name] = value
	}
	if name == "state.ttl" {
		e.jobOpts.applyStateTTLLocked()
	}
	e.mu.Unlock()
	return nil
}

func (e *settingsStore) durationSetting(name string) time.Duration {
	v := e.setting(name)
	if v == "off" {
		return 0
	}
	d, _ := checkpoint.ParseDuration(v)
	return d
}

func (e *settingsStore) checkpointConfig() checkpoint.Config {
	ret, _ := strconv.Atoi(e.setting("checkpoint.retained"))
	tol, _ := strconv.Atoi(e.setting("checkpoint.tolerable_failures"))
	return checkpoint.Config{
		Interval:          e.durationSetting("checkpoint.interval"),
		BarrierInterval:   e.durationSetting("barrier.interval"),
		MinPause:          e.durationSetting("checkpoint.min_pause"),
		Timeout:           e.durationSetting("checkpoint.timeout"),
		MaxConcurrent:     1,
		Retained:          ret,
		AtLeastOnce:       e.setting("checkpoint.mode") == "at_least_once",
		TolerableFailures: tol,
	}
}

// allDBSettings returns every database setting name, sorted.
func allDBSettings() []string {
	names := make([]string, 0, len(dbSettings))
	for n := range dbSettings {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// honestSetting checks a setting that changes how values are read or
// printed. streamdb implements one behaviour of each, so it accepts the
// values that ask for that behaviour and refuses the others (22023) rather
// than accept a value it would ignore:
//
//	standard_conforming_strings  on: backslashes in '...' are literal (off would need the lexer to read them as escapes)
//	DateStyle                    ISO output with MDY input order (ISO, MDY, or both)
//	IntervalStyle                postgres
//	extra_float_digits           1 to 3: shortest exact output, which PostgreSQL 12 and later print for any value above 0
func honestSetting(name, v string) (string, error) {
	refuse := func(hint string) error {
		return &sqlerr.Error{Code: sqlerr.InvalidParameterValue,
			Msg: fmt.Sprintf("invalid value for parameter %q: %q", name, v), Detail: hint}
	}
	l := strings.ToLower(strings.TrimSpace(v))
	switch name {
	case "standard_conforming_strings":
		switch l {
		case "on", "true", "yes", "1":
			return "on", nil
		}
		return "", refuse("streamdb reads string literals with standard_conforming_strings on only: a backslash in '...' is an ordinary character; write E'...' for escapes.")
	case "datestyle":
		for _, part := range strings.Split(l, ",") {
			switch strings.TrimSpace(part) {
			case "iso", "mdy", "default":
			default:
				return "", refuse("streamdb supports DateStyle ISO, MDY only (ISO output, month-day-year input order).")
			}
		}
		return "ISO, MDY", nil
	case "intervalstyle":
		if l == "postgres" {
			return "postgres", nil
		}
		return "", refuse("streamdb supports IntervalStyle postgres only.")
	case "extra_float_digits":
		n, err := strconv.Atoi(l)
		if err == nil && n >= 1 && n <= 3 {
			return strconv.Itoa(n), nil
		}
		return "", refuse("streamdb prints floats exactly (shortest round-trip form), as PostgreSQL does for extra_float_digits 1 to 3; values of 0 or less, which round, are not supported.")
	}
	return v, nil
}
