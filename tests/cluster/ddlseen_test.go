package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestClusterDDLSeenOnEveryNode: a table created on one node is at once
// usable on another, as a client that moves between nodes (libpq's
// host=a,b,c) expects: CREATE returns once its own node applied it, and a
// statement elsewhere that names a relation its node does not know yet
// waits for the catalog entries appended before it and runs again
// (sql.catalogBehind), in the simple protocol and in the extended one
// (whose Parse binds the statement).
func TestClusterDDLSeenOnEveryNode(t *testing.T) {
	ctx := context.Background()
	_, kafkaAddr := startKafka(t, 1)
	c := startCluster(t, "ddlseen", 3, clusterConf{extra: []string{"--cluster-kafka", kafkaAddr}, noStorage: true})
	for i := range 30 {
		a, b := c.conns[i%3], c.conns[(i+1)%3]
		name := fmt.Sprintf("t%d", i)
		execAll(t, a, "CREATE TABLE "+name+" (k BIGINT, v TEXT)")
		mode := pgx.QueryExecModeSimpleProtocol
		if i%2 == 1 {
			mode = pgx.QueryExecModeDescribeExec
		}
		if _, err := b.Exec(ctx, "INSERT INTO "+name+" VALUES (1, 'x')", mode); err != nil {
			t.Fatalf("INSERT into %s on %s right after its CREATE on %s (%v): %v", name, c.nodes[(i+1)%3].id, c.nodes[i%3].id, mode, err)
		}
		if _, err := c.conns[(i+2)%3].Exec(ctx, "SHOW CREATE TABLE "+name, mode); err != nil {
			t.Fatalf("SHOW CREATE TABLE %s on %s (%v): %v", name, c.nodes[(i+2)%3].id, mode, err)
		}
	}
	// A relation that exists nowhere is still 42P01, after the wait.
	if _, err := c.conns[1].Exec(ctx, "INSERT INTO nowhere VALUES (1)"); sqlstate(err) != "42P01" {
		t.Fatalf("INSERT into a table that does not exist: %v, want 42P01", err)
	}
}
