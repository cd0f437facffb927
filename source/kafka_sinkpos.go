package source

import (
	"context"
	"strconv"
	"time"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LastSinkPosition finds the position the named sink's last committed
// transaction ended at: the largest streamdb.pos header among the sink's
// committed records of topic (read_committed). Each partition is read
// backwards from its last stable offset in growing windows until one of
// the sink's records turns up. found is false if the topic has none.
// Call it after fencing the sink's transactional id, so no transaction of
// the sink is still open.
func LastSinkPosition(ctx context.Context, brokers []string, topic, sink string) (pos uint64, found bool, err error) {
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
			got, ok, err := scanSinkPos(ctx, brokers, topic, sink, p, from, end)
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

// scanSinkPos reads partition p from `from` to end (read_committed, with
// control records, so the last stable offset is reached) and returns the
// largest streamdb.pos of the sink's records.
func scanSinkPos(ctx context.Context, brokers []string, topic, sink string, p int32, from, end int64) (uint64, bool, error) {
	if from >= end {
		return 0, false, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return 0, false, sqlerr.New(sqlerr.InvalidParameterValue, "kafka client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var (
		pos   uint64
		found bool
		next  = from
	)
	for next < end {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, false, sqlerr.New(sqlerr.ConnectionException, "kafka topic %q partition %d: reading the sink's position: %v", topic, p, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return 0, false, sqlerr.New(sqlerr.ConnectionException, "kafka topic %q partition %d: %v", topic, p, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = max(next, r.Offset+1)
			if r.Attrs.IsControl() {
				return
			}
			var name, at string
			for _, h := range r.Headers {
				switch h.Key {
				case "streamdb.sink":
					name = string(h.Value)
				case "streamdb.pos":
					at = string(h.Value)
				}
			}
			if name != sink {
				return
			}
			if v, err := strconv.ParseUint(at, 10, 64); err == nil && (!found || v > pos) {
				pos, found = v, true
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
	return pos, found, nil
}
