package cluster

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/streamdb/streamdb/exec/exchange"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestClusterExchangeListener: on a three-node cluster each node's peer
// listener serves, on its one port, both the HTTP peer endpoints and the
// Arrow Flight exchange service (gRPC over unencrypted HTTP/2): a stream
// whose descriptor names no job/edge/sender/receiver is refused by the
// exchange's handler, and a stream to an instance no job opened is
// NotFound; /metrics of every node has the exchange series.
//
// The exchange carries no job's edges yet (docs/design/cluster.md,
// "Exchanges"): what runs across nodes is tested in exec/exchange.
func TestClusterExchangeListener(t *testing.T) {
	c, web := startWebCluster(t, "exchange", 3)
	for i, n := range c.nodes {
		code, body := httpGet(t, "http://"+n.peer+"/peer/health")
		if code != http.StatusOK || !strings.HasPrefix(body, "node "+n.id) {
			t.Fatalf("%s: GET /peer/health: %d %q", n.id, code, body)
		}
		cc, err := exchange.Conn(n.peer)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		refused := func(path []string) error {
			st, err := flight.NewFlightServiceClient(cc).DoExchange(ctx)
			if err != nil {
				return err
			}
			if err := st.Send(&flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: path}}); err != nil {
				return err
			}
			_, err = st.Recv()
			return err
		}
		if err := refused([]string{"a", "b"}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "job/edge/sender/receiver") {
			t.Fatalf("%s: a stream without a stream id: %v, want InvalidArgument from the exchange", n.id, err)
		}
		if err := refused([]string{"nojob", "0", "0", "0"}); status.Code(err) != codes.NotFound {
			t.Fatalf("%s: a stream to no receiver: %v, want NotFound", n.id, err)
		}
		cancel()
		_ = cc.Close()
		fams := scrape(t, web[i])
		for _, dir := range []string{"sent", "received"} {
			if _, ok := metricValue(fams, "streamdb_exchange_bytes_total", "node", n.id, "direction", dir); !ok {
				t.Errorf("/metrics of %s has no streamdb_exchange_bytes_total{direction=%q}", n.id, dir)
			}
		}
		if _, ok := metricValue(fams, "streamdb_exchange_backpressure_seconds_total", "node", n.id); !ok {
			t.Errorf("/metrics of %s has no streamdb_exchange_backpressure_seconds_total", n.id)
		}
	}
}

// startWebCluster starts an testCluster of n nodes, each serving /metrics
// on an address of its own (returned in node order).
func startWebCluster(t *testing.T, name string, n int) (*testCluster, []string) {
	t.Helper()
	c := startCluster(t, name, 0, clusterConf{})
	var web []string
	for i := 0; i < n; i++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		web = append(web, addr)
		c.conf.extra = []string{"--http", addr}
		c.add(t)
	}
	return c, web
}
