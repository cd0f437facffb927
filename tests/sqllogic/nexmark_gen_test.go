package sqllogic

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file is a deterministic Nexmark event generator after the model of
// the Nexmark benchmark's generator (Beam's NexmarkGenerator, which
// RisingWave's nexmark connector follows): events are numbered, and event n
// is a person, an auction or a bid in the proportion 1 : 3 : 46; ids rise
// with the event number; auctions are sold by recent (often "hot") persons
// and bids go to recent (often hot) auctions by recent (often hot)
// bidders, a few to auctions not created yet; half the bids come through
// one of four hot channels, the rest through "channel-N" with a URL whose
// channel_id parameter is N bit-reversed. Event time advances by a fixed
// gap per event, so no two events share a timestamp (the top-N queries
// order by time and stay deterministic). The same seed gives the same
// events.
//
// Rows are rendered in COPY text format for the RisingWave schema of the
// person, auction and bid tables (nexmarkDDL).

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

// The generator's constants, as Nexmark's defaults.
const (
	nxPersonProportion  = 1
	nxAuctionProportion = 3
	nxBidProportion     = 46
	nxTotalProportion   = nxPersonProportion + nxAuctionProportion + nxBidProportion

	nxFirstPersonID   = 1000
	nxFirstAuctionID  = 1000
	nxFirstCategoryID = 10
	nxNumCategories   = 5

	nxNumActivePeople      = 1000 // sellers and bidders are drawn from the latest people
	nxPersonIDLead         = 10   // ... or up to this many people ahead
	nxNumInFlightAuctions  = 100  // bids go to the latest auctions
	nxAuctionIDLead        = 10   // ... or up to this many ahead
	nxHotRatio             = 100  // hot ids are multiples of this
	nxHotAuctionRatio      = 2    // 1 in 2 bids is for the hot auction
	nxHotBidderRatio       = 4    // 3 in 4 bids are by the hot bidder
	nxHotSellerRatio       = 4    // 3 in 4 auctions are by the hot seller
	nxHotChannelsRatio     = 2    // 1 in 2 bids comes through a hot channel
	nxChannels             = 10000
	nxInterEventDelay      = 100 * time.Microsecond // 10,000 events a second
	nxTimestampLayout      = "2006-01-02 15:04:05.999999"
	nxMaxExtra             = 16
	nxItemNameLength       = 20
	nxDescriptionMaxLength = 40
)

var (
	nxBaseTime    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nxHotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
	nxFirstNames  = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	nxLastNames   = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	nxCities      = []string{"phoenix", "los angeles", "san francisco", "boise", "portland", "bend", "redmond", "seattle", "kent", "cheyenne"}
	// Lower case, as RisingWave's generator writes them (its q3 filters on 'or', 'id', 'ca').
	nxStates = []string{"az", "ca", "id", "or", "wa", "wy"}
)

// nexmarkGen generates Nexmark events in order.
type nexmarkGen struct {
	rng     *rand.Rand
	next    int64    // number of the next event
	hotURLs []string // one URL per hot channel
}

func newNexmarkGen(seed uint64) *nexmarkGen {
	g := &nexmarkGen{rng: rand.New(rand.NewPCG(seed, 0x4e45584d))}
	for range nxHotChannels {
		g.hotURLs = append(g.hotURLs, g.baseURL())
	}
	return g
}

// nexmarkRows holds events rendered as COPY text rows, one string per table.
type nexmarkRows struct {
	person, auction, bid strings.Builder
	persons, auctions    int
	bids                 int
}

// events renders the next n events into a new nexmarkRows.
func (g *nexmarkGen) events(n int) *nexmarkRows {
	r := &nexmarkRows{}
	for i := 0; i < n; i++ {
		id := g.next
		g.next++
		ts := g.timestamp(id)
		switch off := id % nxTotalProportion; {
		case off < nxPersonProportion:
			g.person(&r.person, id, ts)
			r.persons++
		case off < nxPersonProportion+nxAuctionProportion:
			g.auction(&r.auction, id, ts)
			r.auctions++
		default:
			g.bid(&r.bid, id, ts)
			r.bids++
		}
	}
	return r
}

func (g *nexmarkGen) timestamp(event int64) time.Time {
	return nxBaseTime.Add(time.Duration(event) * nxInterEventDelay)
}

// lastBase0PersonID is the 0-based id of the last person created at or
// before event.
func lastBase0PersonID(event int64) int64 {
	epoch, off := event/nxTotalProportion, event%nxTotalProportion
	if off >= nxPersonProportion {
		off = nxPersonProportion - 1
	}
	return epoch*nxPersonProportion + off
}

// lastBase0AuctionID is the 0-based id of the last auction created at or
// before event (-1 before the first).
func lastBase0AuctionID(event int64) int64 {
	epoch, off := event/nxTotalProportion, event%nxTotalProportion
	switch {
	case off < nxPersonProportion:
		epoch--
		off = nxAuctionProportion - 1
	case off >= nxPersonProportion+nxAuctionProportion:
		off = nxAuctionProportion - 1
	default:
		off -= nxPersonProportion
	}
	return epoch*nxAuctionProportion + off
}

// nextBase0PersonID picks a recent person, or one a little ahead.
func (g *nexmarkGen) nextBase0PersonID(event int64) int64 {
	people := lastBase0PersonID(event) + 1
	active := min(people, nxNumActivePeople)
	return people - active + g.rng.Int64N(active+nxPersonIDLead)
}

// nextBase0AuctionID picks a recent auction, or one a little ahead.
func (g *nexmarkGen) nextBase0AuctionID(event int64) int64 {
	last := lastBase0AuctionID(event)
	lo := max(last-nxNumInFlightAuctions, 0)
	return lo + g.rng.Int64N(max(last-lo+1, 0)+nxAuctionIDLead)
}

// price is log-uniform between 1.00 and 1,000,000.00 (in cents).
func (g *nexmarkGen) price() int64 {
	return int64(math.Round(math.Pow(10, g.rng.Float64()*6) * 100))
}

// str is a random string of 1..maxLen lower-case letters with an
// occasional space.
func (g *nexmarkGen) str(maxLen int) string {
	n := 1 + g.rng.IntN(maxLen)
	b := make([]byte, n)
	for i := range b {
		if i > 0 && g.rng.IntN(13) == 0 {
			b[i] = ' '
		} else {
			b[i] = byte('a' + g.rng.IntN(26))
		}
	}
	return string(b)
}

func (g *nexmarkGen) baseURL() string {
	return "https://www.nexmark.com/" + g.str(5) + "/" + g.str(5) + "/" + g.str(5) + "/item.htm?query=1"
}

func nxTS(t time.Time) string { return t.Format(nxTimestampLayout) }

func (g *nexmarkGen) person(b *strings.Builder, event int64, t time.Time) {
	id := nxFirstPersonID + lastBase0PersonID(event)
	name := nxFirstNames[g.rng.IntN(len(nxFirstNames))] + " " + nxLastNames[g.rng.IntN(len(nxLastNames))]
	email := g.str(7) + "@" + g.str(5) + ".com"
	card := strconv.Itoa(1000+g.rng.IntN(9000)) + " " + strconv.Itoa(1000+g.rng.IntN(9000)) + " " +
		strconv.Itoa(1000+g.rng.IntN(9000)) + " " + strconv.Itoa(1000+g.rng.IntN(9000))
	city := nxCities[g.rng.IntN(len(nxCities))]
	state := nxStates[g.rng.IntN(len(nxStates))]
	nxRow(b, strconv.FormatInt(id, 10), name, email, card, city, state, nxTS(t), g.str(nxMaxExtra))
}

func (g *nexmarkGen) auction(b *strings.Builder, event int64, t time.Time) {
	id := nxFirstAuctionID + lastBase0AuctionID(event)
	var seller int64
	if g.rng.IntN(nxHotSellerRatio) > 0 {
		seller = lastBase0PersonID(event) / nxHotRatio * nxHotRatio
	} else {
		seller = g.nextBase0PersonID(event)
	}
	seller += nxFirstPersonID
	category := nxFirstCategoryID + g.rng.Int64N(nxNumCategories)
	initial := g.price()
	reserve := initial + g.price()
	// An auction lasts up to twice the time it takes for
	// nxNumInFlightAuctions more auctions to be created, as in Nexmark.
	horizon := time.Duration(nxNumInFlightAuctions*nxTotalProportion/nxAuctionProportion) * nxInterEventDelay
	expires := t.Add(time.Millisecond + time.Duration(g.rng.Int64N(int64(2*horizon)))).Truncate(time.Microsecond)
	nxRow(b, strconv.FormatInt(id, 10), g.str(nxItemNameLength), g.str(nxDescriptionMaxLength),
		strconv.FormatInt(initial, 10), strconv.FormatInt(reserve, 10), nxTS(t), nxTS(expires),
		strconv.FormatInt(seller, 10), strconv.FormatInt(category, 10), g.str(nxMaxExtra))
}

func (g *nexmarkGen) bid(b *strings.Builder, event int64, t time.Time) {
	var auction, bidder int64
	if g.rng.IntN(nxHotAuctionRatio) > 0 {
		auction = lastBase0AuctionID(event) / nxHotRatio * nxHotRatio
	} else {
		auction = g.nextBase0AuctionID(event)
	}
	auction += nxFirstAuctionID
	if g.rng.IntN(nxHotBidderRatio) > 0 {
		bidder = lastBase0PersonID(event)/nxHotRatio*nxHotRatio + 1
	} else {
		bidder = g.nextBase0PersonID(event)
	}
	bidder += nxFirstPersonID
	price := g.price()
	var channel, url string
	if g.rng.IntN(nxHotChannelsRatio) > 0 {
		i := g.rng.IntN(len(nxHotChannels))
		channel, url = nxHotChannels[i], g.hotURLs[i]
	} else {
		n := g.rng.IntN(nxChannels)
		channel = "channel-" + strconv.Itoa(n)
		// Nexmark writes abs(Integer.reverse(n)): the 32 bits reversed.
		rev := int64(int32(bits.Reverse32(uint32(n))))
		if rev < 0 {
			rev = -rev
		}
		url = g.baseURL() + "&channel_id=" + strconv.FormatInt(rev, 10)
	}
	nxRow(b, strconv.FormatInt(auction, 10), strconv.FormatInt(bidder, 10), strconv.FormatInt(price, 10),
		channel, url, nxTS(t), g.str(nxMaxExtra))
}

// nxRow writes one COPY text row; the generator's values hold no tab,
// newline or backslash, so they need no escaping.
func nxRow(b *strings.Builder, fields ...string) {
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(f)
	}
	b.WriteByte('\n')
}

// TestNexmarkGen checks the generator: the same seed gives the same events,
// kinds come in the proportion 1 : 3 : 46, person and auction ids rise by
// one from their first id, and event time rises with every event.
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
	}{{a.person.String(), nxFirstPersonID}, {a.auction.String(), nxFirstAuctionID}} {
		for i, line := range strings.Split(strings.TrimSuffix(tc.rows, "\n"), "\n") {
			id, err := strconv.ParseInt(strings.SplitN(line, "\t", 2)[0], 10, 64)
			if err != nil || id != tc.first+int64(i) {
				t.Fatalf("row %d has id %q, want %d: %s", i, strings.SplitN(line, "\t", 2)[0], tc.first+int64(i), line)
			}
		}
	}
	var last time.Time
	for _, line := range strings.Split(strings.TrimSuffix(a.bid.String(), "\n"), "\n") {
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
}
