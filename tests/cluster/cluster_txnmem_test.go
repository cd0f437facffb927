package cluster

import (
	"context"
	"strings"
	"testing"
)

// TestClusterTxnMemoryLimit: in cluster mode a transaction's rows stay in
// memory until COMMIT produces them in one Kafka transaction, so they are
// bounded by the session's work_mem: the INSERT (or COPY) that would pass
// it fails with 53200, the transaction is aborted and writes nothing, and
// the session and the server go on (a transaction within the bound
// commits, and the table holds exactly its rows).
func TestClusterTxnMemoryLimit(t *testing.T) {
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "txnmem", 1, clusterConf{noStorage: true, extra: []string{"--cluster-kafka", kafkaAddr}})
	conn := c.conns[0]
	ctx := context.Background()
	execAll(t, conn, bidsTable, "SET work_mem = '64kB'")

	// INSERTs in a block until one passes 64 kB.
	execAll(t, conn, "BEGIN")
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = conn.Exec(ctx, insertSQL(ledgerRows(100000+i*50, 50)))
	}
	if sqlstate(err) != "53200" || !strings.Contains(err.Error(), "work_mem") {
		t.Fatalf("INSERTs past work_mem in a transaction: %v, want 53200 naming work_mem", err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); sqlstate(err) != "25P02" {
		t.Fatalf("a statement after the refused INSERT: %v, want 25P02 (the transaction is aborted)", err)
	}
	execAll(t, conn, "ROLLBACK")

	// COPY in a block, past the bound in one statement.
	execAll(t, conn, "BEGIN")
	rows := ledgerRows(200000, 2000)
	_, err = conn.PgConn().CopyFrom(ctx, strings.NewReader(strings.Join(rows, "\n")+"\n"), "COPY bids FROM STDIN")
	if sqlstate(err) != "53200" {
		t.Fatalf("COPY past work_mem in a transaction: %v, want 53200", err)
	}
	execAll(t, conn, "ROLLBACK")

	// Within the bound: committed.
	ok := ledgerRows(0, 20)
	execAll(t, conn, "BEGIN", insertSQL(ok[:10]), insertSQL(ok[10:]), "COMMIT")
	got, err := copyOutLines(conn, "COPY bids TO STDOUT")
	if err != nil || len(got) != 20 {
		t.Fatalf("the table after the refused and the committed transactions: %d rows %v, want the committed 20", len(got), err)
	}
}
