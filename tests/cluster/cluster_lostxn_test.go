package cluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestClusterLostNodeTxnFenced: a node killed inside an INSERT (the
// failpoint stream_log:precommit kills it with the transaction's rows sent
// to Kafka and not committed) leaves its Kafka transaction open, and
// read_committed readers of the topic (reads of the table, the view's
// job) cannot read past it. Once the dead node's lease expires, the live
// node fences the dead node's transactional ids (InitProducerID), which
// aborts the open transaction: rows acknowledged after it on the live node
// become readable long before Kafka's transaction timeout (a minute), the
// dead node's rows never do, and the view equals the batch query over the
// acknowledged rows.
func TestClusterLostNodeTxnFenced(t *testing.T) {
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "lostxn", 2, clusterConf{noStorage: true, extra: []string{"--cluster-kafka", kafkaAddr},
		env: map[string][]string{"n2": {"STREAMDB_FAILPOINTS=stream_log:precommit:1:kill"}}})
	ctx := context.Background()
	const perChannel = "SELECT channel, count(*) AS n, sum(price) AS s FROM bids GROUP BY channel"
	execAll(t, c.conns[0], bidsTable, "CREATE MATERIALIZED VIEW per_channel WITH (distributed = false) AS "+perChannel)
	waitUntil(t, 20*time.Second, "n2 to apply CREATE TABLE bids", func() bool {
		_, err := queryRows(c.conns[1], "SELECT count(*) FROM bids")
		return err == nil
	})
	led := &streamLedger{}
	first := ledgerRows(0, 10)
	execAll(t, c.conns[0], insertSQL(first))
	led.add(first)

	// n2 dies inside its INSERT, its transaction open.
	if _, err := c.conns[1].Exec(ctx, insertSQL(ledgerRows(1000, 5))); err == nil {
		t.Fatal("the INSERT on n2 was acknowledged; the failpoint should have killed n2 before its commit")
	}
	select {
	case <-c.nodes[1].srv.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("n2 did not exit at its failpoint")
	}
	killed := time.Now()
	// Rows acknowledged on n1 after the open transaction, in the same
	// partition: behind it for read_committed readers until it ends.
	second := ledgerRows(10, 10)
	execAll(t, c.conns[0], insertSQL(second))
	led.add(second)

	// Well within the transaction timeout (a minute): the fence ended it.
	waitUntil(t, 40*time.Second, "the rows acknowledged after n2's open transaction to be readable", func() bool {
		got, err := queryRows(c.conns[0], "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM bids")
		return err == nil && len(got) == 1 && got[0] == "'20' | '20' | '0' | '19'"
	})
	t.Logf("readable %v after n2 died", time.Since(killed).Round(time.Millisecond))
	// The log line follows the fence of all four ids; the first one ended
	// the transaction.
	waitUntil(t, 30*time.Second, "n1 to log fencing n2's transactions", func() bool {
		return strings.Contains(c.nodes[0].srv.Output(), `ended what a lost node left open (its Kafka transactions are fenced)" lost=n2`)
	})
	want := oracle(t, []string{bidsTable}, led.all(), perChannel)[0]
	waitUntil(t, 60*time.Second, "per_channel to equal the batch query over the acknowledged rows", func() bool {
		got, err := clusterRows(c.conns[0], "SELECT * FROM per_channel")
		return err == nil && strings.Join(got, "\n") == strings.Join(want, "\n")
	})
}
