// Package connector is the contract between streamdb's runtime and the
// external systems and generators it reads and writes: sources that jobs
// read directly (CREATE SOURCE ... WITH (connector = ...)) and sinks that
// views' changes are written to (CREATE SINK). Each system's source,
// sink, formats and admin code live side by side in a subpackage
// (connector/kafka, connector/nexmark, connector/datagen) that registers
// its source under its name (Register) and imports only this package,
// types, sqlerr, storage-free helpers and its client libraries: never the
// runtime (exec, storage, checkpoint), nor another connector.
//
// The source contract, written for a real external system (Kafka):
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
//
// The sink contract is a two-phase commit (sink.go): TwoPhaseSink is the
// connector's half, which the runtime (exec.SinkRunner) drives.
package connector

import (
	"fmt"
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

// Projector is a Connector that can leave out the work of columns a job
// never reads. Project returns the connector whose batches keep the
// declared schema, every column read (read[i] for declared column i)
// holding exactly the values it holds without the projection, and every
// other column all NULL. A generator keeps its random draws in order, so
// a read column never depends on whether another is read. The runtime
// projects a job's connector sources by the columns its plan reads
// (planner.MarkSourceReads); a batch query reads every column.
type Projector interface {
	Project(read []bool) Connector
}

// ColumnDeriver is a Connector that can name its columns itself (a Kafka
// source with format 'avro': the fields of its registered schema). CREATE
// SOURCE without a column list stores these; a connector made with no
// columns that has none to derive leaves the list empty.
type ColumnDeriver interface {
	DerivedColumns() []Column
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

// BaseTime is the event time generators start at: nexmark's event 0,
// datagen's row 0.
var BaseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// EOF is returned by Read when a bounded split has no more rows.
var EOF = io.EOF

// Factory makes a source's connector from its declared columns and its
// WITH options; it takes (Options.Take) the options it knows.
type Factory func(cols []Column, o *Options) (Connector, error)

var factories = map[string]Factory{}

// Register makes name (lower case) a source connector; a connector
// package calls it from its init.
func Register(name string, f Factory) {
	if _, dup := factories[name]; dup {
		panic("connector " + name + " registered twice")
	}
	factories[name] = f
}

// SplitsKey is the option under which the runtime hands a stored source
// its split count (storage.TableDef.Partitions), so opening it does not
// ask its system (kafka); CREATE SOURCE leaves it out and asks.
const SplitsKey = "__splits"

// New validates a source's columns and options and returns its connector.
// Bad options get 22023 naming the option; columns the connector cannot
// produce are refused with 42703 or 42804.
func New(cols []Column, opts map[string]string) (Connector, error) {
	o := newOptions(opts)
	name, ok := o.Take("connector")
	if !ok {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"connector\" is required (nexmark, datagen or kafka)")
	}
	f, ok := factories[strings.ToLower(name)]
	switch {
	case strings.EqualFold(name, "file"):
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "connector %q is not supported yet", name)
	case !ok:
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"connector\": unknown connector %q (nexmark, datagen or kafka)", name)
	}
	c, err := f(cols, o)
	if err != nil {
		return nil, err
	}
	o.Take(SplitsKey) // the stored split count: only kafka reads it
	if err := o.unused(name); err != nil {
		return nil, err
	}
	return c, nil
}

// SplitsGrown is what a running reader fails with when its system has
// more splits (a Kafka topic more partitions) than the source has splits. The runtime raises the
// source's split count in the catalog (durably) and restarts the job from
// its last committed state with the new splits; they have no position, so
// they start at the new partitions' earliest offsets.
type SplitsGrown struct {
	Source string // the source's name, set by the runtime
	Topic  string
	Splits int // the topic's partition count now
}

func (e *SplitsGrown) Error() string {
	return fmt.Sprintf("kafka topic %q of source %s has grown to %d partitions", e.Topic, e.Source, e.Splits)
}

// Committer is a Reader that reports a split's position to its system
// once the checkpoint holding it has completed (Kafka: a consumer group's
// committed offset), for monitoring only: the runtime never reads it back.
// CommitPosition must not block.
type Committer interface {
	CommitPosition(pos Position)
}

// BadMessage is a message a reader could not decode and left out.
type BadMessage struct {
	Split  int
	Offset uint64 // the system's own offset of the message
	Code   string
	Err    string
	Raw    string
}

func (b BadMessage) String() string {
	return fmt.Sprintf("partition %d, offset %d: %s", b.Split, b.Offset, b.Err)
}

// BadReporter is a Reader that leaves out messages it cannot decode: the
// job fails naming the first one, or records each under job.error_policy
// = 'skip'.
type BadReporter interface {
	TakeBad() []BadMessage
}

// LossReporter is a Reader whose system can delete records before the
// reader gets to them (Kafka retention, DeleteRecords): TakeLost is how
// many it had to skip since the last call. The job counts them where
// users look (SHOW JOBS lost_rows, streamdb_job_lost_rows_total).
type LossReporter interface {
	TakeLost() int64
}

// Options are a source's WITH options; a connector takes the ones it
// knows, and any left over are refused. Keys are case-insensitive and
// '-' (Flink's spelling) is the same as '_'.
type Options struct {
	m    map[string]string
	used map[string]bool
}

// NormKey is an option key as Options holds it: lower case, '-' as '_'.
func NormKey(k string) string { return strings.ReplaceAll(strings.ToLower(k), "-", "_") }

func newOptions(m map[string]string) *Options {
	o := &Options{m: map[string]string{}, used: map[string]bool{}}
	for k, v := range m {
		o.m[NormKey(k)] = v
	}
	return o
}

// Has reports whether option k is given, without taking it.
func (o *Options) Has(k string) bool {
	_, ok := o.m[k]
	return ok
}

// Take takes option k.
func (o *Options) Take(k string) (string, bool) {
	v, ok := o.m[k]
	if ok {
		o.used[k] = true
	}
	return v, ok
}

// Int takes an integer option in [lo, hi], def if absent.
func (o *Options) Int(k string, def, lo, hi int64) (int64, error) {
	v, ok := o.Take(k)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, sqlerr.New(sqlerr.InvalidParameterValue, "option %q must be an integer from %d to %d, not %q", k, lo, hi, v)
	}
	return n, nil
}

// Float takes a number option (false: absent).
func (o *Options) Float(k string) (float64, bool, error) {
	v, ok := o.Take(k)
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
func (o *Options) unused(connector string) error {
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

// Throttle keeps a reader at or below a rate (rows per second; 0: no
// limit), counted from when the reader was opened.
type Throttle struct {
	rate  float64
	start time.Time
	sent  int64
}

// NewThrottle returns the throttle of a reader (nil: not paced).
func NewThrottle(rate float64, paced bool) *Throttle {
	if !paced {
		return nil
	}
	return &Throttle{rate: rate, start: time.Now()}
}

// Allow returns how many of want rows may go now.
func (t *Throttle) Allow(want int) int {
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

// Took counts n rows sent.
func (t *Throttle) Took(n int) {
	if t != nil {
		t.sent += int64(n)
	}
}

// SameKind reports whether a declared type can hold a connector column of
// kind want (VARCHAR(n) and TEXT are both text; integer widths must match).
func SameKind(declared types.T, want types.Kind) bool { return declared.Kind == want }
