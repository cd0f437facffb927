package crash

import (
	"testing"
	"time"
)

// TestSIGTERMUnderLoad stops the server with SIGTERM while four clients
// INSERT: it must exit with status 0 within sqllogic.StopTimeout, and after
// a restart every acknowledged row is stored once and the views are exact.
func TestSIGTERMUnderLoad(t *testing.T) {
	rng, seed := newRand(t)
	srv, conn := loadServer(t, nil, 1, "SET checkpoint.interval = '200ms'")
	createViews(t, conn)
	load := startLoader(srv.ConnString(), seed, insertLoad, 4)
	defer func() {
		if !load.isStopped() {
			load.stop()
		}
	}()
	d := time.Second + time.Duration(rng.Int64N(int64(time.Second)))
	time.Sleep(d)
	acked := load.ackedRows()
	start := time.Now()
	srv.Stop() // fails the test unless the exit status is 0
	t.Logf("SIGTERM after %v of load (%d rows acknowledged): exited 0 in %v",
		d.Round(time.Millisecond), acked, time.Since(start).Round(time.Millisecond))
	if acked == 0 {
		t.Errorf("no INSERT was acknowledged in %v of load", d)
	}
	srv.Restart(t)
	time.Sleep(500 * time.Millisecond)
	load.stop()
	load.verify(t, srv.Conn(t), true)
	checkOutput(t, srv)
}
