// Package source is streamdb's connector interface: the external systems
// and generators that jobs read directly, without copying their rows into
// a stream log (CREATE SOURCE ... WITH (connector = ...)).
//
// The contract, written for a real external system (Kafka is next):
//
//  1. A Connector is made once per CREATE SOURCE from its declared columns
//     and WITH options (New); it validates both then, so a source that
//     exists can always be opened.
//  2. Its content is cut into a fixed number of splits (Kafka: partitions;
//     a generator: event numbers modulo the split count). The job reading
//     a source gives each split to one source partition; split i is always
//     read by partition i, so a split's position is the job's offset of
//     partition i.
//  3. A Position is a split's read position as a uint64 (a Kafka offset; a
//     generator's count of events of the split read so far). The runtime
//     stores it where it stores stream offsets ("o/" keys), so checkpoints,
//     savepoints and RESTORE carry it unchanged: reopening a split at a
//     stored position reads exactly the rows after it.
//  4. A Reader reads one split in Arrow record batches, never past the
//     rate the source was given. The caller owns each batch it returns.
//  5. A bounded connector's splits end; Read then returns io.EOF. A batch
//     SELECT reads a bounded source's whole content and an unbounded one
//     only under a LIMIT.
package source

import (
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Column is one declared column of a source.
type Column struct {
	Name string
	Type types.T
}

// Position is a split's read position (see the package contract, 3).
type Position uint64

// Connector is one source's connection to its system.
type Connector interface {
	// Splits is the number of splits. It is fixed for a Connector; a
	// Kafka source whose topic gains partitions grows through its catalog
	// entry and a job restart (SplitsGrown), never in place.
	Splits() int
	// Bounded reports whether the splits end (Read returns io.EOF).
	Bounded() bool
	// End is the split's end as of now, if the connector knows one: a
	// bounded generator's last position when it is not paced (a paced one
	// has made only what its rate allowed so far, so it has none); a
	// Kafka partition's high watermark. CHECKPOINT waits for jobs to read
	// up to it, and SHOW JOBS' lag counts from it.
	End(split int) (Position, bool)
	// Open starts reading split at pos. A paced reader keeps to the
	// source's rate; a batch query's is not paced.
	Open(split int, pos Position, paced bool) (Reader, error)
}

// Reader reads one split.
type Reader interface {
	// Read returns the next rows, at most max of them, as a batch of the
	// source's declared columns, and advances Position past them. It
	// returns (nil, nil) when no row is available now (the rate limit or
	// an idle system: call again later) and io.EOF when the split ended.
	Read(mem memory.Allocator, max int) (arrow.RecordBatch, error)
	// Position is the position after the rows read so far.
	Position() Position
	Close() error
}

// EOF is returned by Read when a bounded split has no more rows.
var EOF = io.EOF

// New validates a source's columns and options and returns its connector.
// Bad options get 22023 naming the option; columns the connector cannot
// produce are refused with 42703 or 42804.
func New(cols []Column, opts map[string]string) (Connector, error) {
	o := newOptions(opts)
	name, ok := o.take("connector")
	if !ok {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"connector\" is required (nexmark, datagen or kafka)")
	}
	var (
		c   Connector
		err error
	)
	switch strings.ToLower(name) {
	case "nexmark":
		c, err = newNexmark(cols, o)
	case "datagen":
		c, err = newDatagen(cols, o)
	case "kafka":
		c, err = newKafka(cols, o)
	case "file":
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "connector %q is not supported yet", name)
	default:
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"connector\": unknown connector %q (nexmark, datagen or kafka)", name)
	}
	if err != nil {
		return nil, err
	}
	o.take(kafkaSplitsKey) // the stored split count: only kafka reads it
	if err := o.unused(name); err != nil {
		return nil, err
	}
	return c, nil
}

// options are a source's WITH options; a connector takes the ones it
// knows, and any left over are refused. Keys are case-insensitive and
// '-' (Flink's spelling) is the same as '_'.
type options struct {
	m    map[string]string
	used map[string]bool
}

func normKey(k string) string { return strings.ReplaceAll(strings.ToLower(k), "-", "_") }

func newOptions(m map[string]string) *options {
	o := &options{m: map[string]string{}, used: map[string]bool{}}
	for k, v := range m {
		o.m[normKey(k)] = v
	}
	return o
}

func (o *options) take(k string) (string, bool) {
	v, ok := o.m[k]
	if ok {
		o.used[k] = true
	}
	return v, ok
}

// int takes an integer option in [lo, hi], def if absent.
func (o *options) int(k string, def, lo, hi int64) (int64, error) {
	v, ok := o.take(k)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "option %q must be an integer from %d to %d, not %q", k, lo, hi, v)
	}
	return n, nil
}

func (o *options) float(k string) (float64, bool, error) {
	v, ok := o.take(k)
	if !ok {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, false, sqlerr.New(sqlerr.InvalidParameterValue, "option %q must be a number, not %q", k, v)
	}
	return f, true, nil
}

// unused refuses the options no one took.
func (o *options) unused(connector string) error {
	var left []string
	for k := range o.m {
		if !o.used[k] {
			left = append(left, k)
		}
	}
	if len(left) == 0 {
		return nil
	}
	sort.Strings(left)
	return sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized option %q for connector %q", left[0], connector)
}

// throttle keeps a reader at or below a rate (rows per second; 0: no
// limit), counted from when the reader was opened.
type throttle struct {
	rate  float64
	start time.Time
	sent  int64
}

// newThrottle returns the throttle of a reader (nil: not paced).
func newThrottle(rate float64, paced bool) *throttle {
	if !paced {
		return nil
	}
	return &throttle{rate: rate, start: time.Now()}
}

// allow returns how many of want rows may go now.
func (t *throttle) allow(want int) int {
	if t == nil || t.rate <= 0 {
		return want
	}
	due := int64(time.Since(t.start).Seconds()*t.rate) + 1
	n := min(int64(want), due-t.sent)
	if n < 0 {
		return 0
	}
	return int(n)
}

func (t *throttle) took(n int) {
	if t != nil {
		t.sent += int64(n)
	}
}

// sameKind reports whether a declared type can hold a connector column of
// kind want (VARCHAR(n) and TEXT are both text; integer widths must match).
func sameKind(declared types.T, want types.Kind) bool { return declared.Kind == want }
