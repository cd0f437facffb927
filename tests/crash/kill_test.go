package crash

import (
	"fmt"
	"testing"
	"time"
)

// TestKill9UnderInsertLoad kills the server five times, about two seconds
// apart, while four clients INSERT continuously, and restarts it each time.
// Afterwards every acknowledged row is in the stream exactly once, every
// INSERT whose outcome the crash hid is there whole or not at all, and both
// views equal the batch query over the stored rows.
func TestKill9UnderInsertLoad(t *testing.T) {
	rng, seed := newRand(t)
	srv, conn := loadServer(t, nil, 2, "SET checkpoint.interval = '200ms'")
	createViews(t, conn)
	load := startLoader(srv.ConnString(), seed, insertLoad, 4)
	defer func() {
		if !load.isStopped() {
			load.stop()
		}
	}()
	var before int64
	for i := 1; i <= 5; i++ {
		d := 1750*time.Millisecond + time.Duration(rng.Int64N(int64(500*time.Millisecond)))
		time.Sleep(d)
		acked := load.ackedRows()
		srv.Kill9()
		t.Logf("kill -9 #%d after %v: %d rows acknowledged so far", i, d.Round(time.Millisecond), acked)
		if acked == before {
			t.Errorf("no INSERT was acknowledged in the %v before kill #%d: the server made no progress", d, i)
		}
		before = acked
		srv.Restart(t)
		checkNotAhead(t, srv.Conn(t), fmt.Sprintf("right after restart #%d", i))
	}
	time.Sleep(500 * time.Millisecond) // load the last incarnation too
	load.stop()
	load.verify(t, srv.Conn(t), true)
	checkOutput(t, srv)
}
