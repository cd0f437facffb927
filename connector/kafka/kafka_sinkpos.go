package kafka

import (
	"context"
	"strconv"
	"time"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LastSinkPosition finds the position the named sink's last committed
// transaction of generation gen ended at: the largest streamdb.pos header
// among the sink's committed records of topic (read_committed) whose
// streamdb.gen header is gen (no header: generation ""). Each partition is read
// backwards from its last stable offset in growing windows until one of
// the sink's records turns up. found is false if the topic has none.
// Call it after fencing the sink's transactional id, so no transaction of
// the sink is still open.
func LastSinkPosition(ctx context.Context, brokers []string, topic, sink, gen string) (pos uint64, found bool, err error) {
	n, err := topicPartitions(brokers, topic)
	if err != nil {
		return 0, false, err
	}
	admin, err := Admin(brokers)
	if err != nil {
		return 0, false, err
	}
	for p := int32(0); p < int32(n); p++ {
		start, err := listOffset(admin, topic, p, -2)
		if err != nil {
			return 0, false, err
		}
		end, err := listOffset(admin, topic, p, -1)
		if err != nil {
			return 0, false, err
		}
		for window := int64(1024); ; window *= 4 {
			from := max(start, end-window)
			got, ok, err := scanSinkPos(ctx, brokers, topic, sink, gen, p, from, end)
			if err != nil {
				return 0, false, err
			}
			if ok {
				if !found || got > pos {
					pos = got
				}
				found = true
				break
			}
			if from == start {
				break
			}
		}
	}
	return pos, found, nil
}

// scanSinkPos reads partition p from `from` to end and returns the
// largest streamdb.pos of the sink's records of generation gen.
func scanSinkPos(ctx context.Context, brokers []string, topic, sink, gen string, p int32, from, end int64) (uint64, bool, error) {
	var (
		pos   uint64
		found bool
	)
	err := scanSinkRecords(ctx, brokers, topic, sink, p, from, end, func(r *kgo.Record, g, at string) {
		if g != gen {
			return
		}
		if v, err := strconv.ParseUint(at, 10, 64); err == nil && (!found || v > pos) {
			pos, found = v, true
		}
	})
	return pos, found, err
}

// SinkState reads every committed record the named sink wrote to topic,
// of every generation, and returns what a reader of the topic ends with:
// the last value per key (a tombstone removes the key). A sink that must
// start over (after RESTORE) compares it with its view.
func SinkState(ctx context.Context, brokers []string, topic, sink string) (map[string][]byte, error) {
	n, err := topicPartitions(brokers, topic)
	if err != nil {
		return nil, err
	}
	admin, err := Admin(brokers)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for p := int32(0); p < int32(n); p++ {
		start, err := listOffset(admin, topic, p, -2)
		if err != nil {
			return nil, err
		}
		end, err := listOffset(admin, topic, p, -1)
		if err != nil {
			return nil, err
		}
		err = scanSinkRecords(ctx, brokers, topic, sink, p, start, end, func(r *kgo.Record, _, _ string) {
			if r.Value == nil {
				delete(out, string(r.Key))
			} else {
				out[string(r.Key)] = r.Value
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanSinkRecords reads partition p from `from` to end (read_committed,
// with control records, so the last stable offset is reached) and calls
// fn with each of the sink's records, its generation and position headers.
func scanSinkRecords(ctx context.Context, brokers []string, topic, sink string, p int32, from, end int64, fn func(r *kgo.Record, gen, pos string)) error {
	if from >= end {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return sqlerr.New(sqlerr.InvalidParameterValue, "kafka client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	next := from
	for next < end {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return sqlerr.New(sqlerr.ConnectionException, "kafka topic %q partition %d: reading the sink's records: %v", topic, p, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return sqlerr.New(sqlerr.ConnectionException, "kafka topic %q partition %d: %v", topic, p, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = max(next, r.Offset+1)
			if r.Attrs.IsControl() || r.Offset >= end {
				return
			}
			var name, gen, at string
			for _, h := range r.Headers {
				switch h.Key {
				case "streamdb.sink":
					name = string(h.Value)
				case "streamdb.gen":
					gen = string(h.Value)
				case "streamdb.pos":
					at = string(h.Value)
				}
			}
			if name == sink {
				fn(r, gen, at)
			}
		})
		// Aborted records are skipped without a trace but their abort
		// marker: the fetch's high watermark tells where the data ends.
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.LastStableOffset >= end && len(fp.Records) == 0 {
				next = max(next, end)
			}
		})
	}
	return nil
}
