package sqllogic

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamdb/streamdb/connector/nexmark"
)

// The Nexmark events of the tests are those of streamdb's nexmark
// connector: nexmark.Generator, the one implementation (see its comment for
// the reference it follows and where it deviates). Here they are rendered
// in COPY text format for the RisingWave schema of the person, auction and
// bid tables (nexmarkDDL), for PostgreSQL and for streamdb's streams.

// nexmarkDDL creates the three streams, as RisingWave's create_tables with
// TIMESTAMP columns; the same text runs in streamdb and PostgreSQL.
var nexmarkDDL = []string{
	`CREATE TABLE person (id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR,
		city VARCHAR, state VARCHAR, date_time TIMESTAMP, extra VARCHAR)`,
	`CREATE TABLE auction (id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT,
		reserve BIGINT, date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR)`,
	`CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
		date_time TIMESTAMP, extra VARCHAR)`,
}

// nexmarkGen renders Nexmark events in order.
type nexmarkGen struct {
	g    *nexmark.Generator
	next int64 // number of the next event
}

func newNexmarkGen(seed uint64) *nexmarkGen { return &nexmarkGen{g: nexmark.NewGenerator(seed)} }

// nexmarkRows holds events rendered as COPY text rows, one string per table.
type nexmarkRows struct {
	person, auction, bid strings.Builder
	persons, auctions    int
	bids                 int
}

// events renders the next n events into a new nexmarkRows.
func (g *nexmarkGen) events(n int) *nexmarkRows {
	r := &nexmarkRows{}
	var buf []byte
	for i := 0; i < n; i++ {
		var kind nexmark.EventKind
		kind, buf = g.g.AppendText(buf[:0], g.next)
		g.next++
		switch kind {
		case nexmark.KindPerson:
			r.person.Write(buf)
			r.persons++
		case nexmark.KindAuction:
			r.auction.Write(buf)
			r.auctions++
		default:
			r.bid.Write(buf)
			r.bids++
		}
	}
	return r
}

const nxTimestampLayout = "2006-01-02 15:04:05.999999"

// TestNexmarkGen checks the generator: the same seed gives the same events,
// kinds come in the proportion 1 : 3 : 46, person and auction ids rise by
// one from 1000, event time rises with every event, and an event is the
// same whether generated in order or alone (any split can start anywhere).
func TestNexmarkGen(t *testing.T) {
	a, b := newNexmarkGen(7).events(5000), newNexmarkGen(7).events(5000)
	if a.person.String() != b.person.String() || a.auction.String() != b.auction.String() || a.bid.String() != b.bid.String() {
		t.Fatal("two generators with one seed gave different events")
	}
	if c := newNexmarkGen(8).events(5000); c.bid.String() == a.bid.String() {
		t.Fatal("generators with different seeds gave the same bids")
	}
	if a.persons != 100 || a.auctions != 300 || a.bids != 4600 {
		t.Fatalf("5000 events: %d persons, %d auctions, %d bids; want 100, 300, 4600", a.persons, a.auctions, a.bids)
	}
	for _, tc := range []struct {
		rows  string
		first int64
	}{{a.person.String(), 1000}, {a.auction.String(), 1000}} {
		for i, line := range strings.Split(strings.TrimSuffix(tc.rows, "\n"), "\n") {
			id, err := strconv.ParseInt(strings.SplitN(line, "\t", 2)[0], 10, 64)
			if err != nil || id != tc.first+int64(i) {
				t.Fatalf("row %d has id %q, want %d: %s", i, strings.SplitN(line, "\t", 2)[0], tc.first+int64(i), line)
			}
		}
	}
	var last time.Time
	bids := strings.Split(strings.TrimSuffix(a.bid.String(), "\n"), "\n")
	for _, line := range bids {
		f := strings.Split(line, "\t")
		if len(f) != 7 {
			t.Fatalf("bid row with %d fields: %q", len(f), line)
		}
		at, err := time.Parse(nxTimestampLayout, f[5])
		if err != nil || !at.After(last) {
			t.Fatalf("bid time %s does not follow %s (%v)", f[5], last, err)
		}
		last = at
	}
	// Event 4999 alone (the last bid) equals its rendering in order.
	_, alone := nexmark.NewGenerator(7).AppendText(nil, 4999)
	if string(alone) != bids[len(bids)-1]+"\n" {
		t.Fatalf("event 4999 alone:\n%s\nin order:\n%s", alone, bids[len(bids)-1])
	}
}
